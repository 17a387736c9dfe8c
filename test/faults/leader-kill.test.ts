import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrivateKafkaCluster, startPrivateKafkaCluster } from '../support/private-kafka-cluster.js';
import { leaderKilled } from './scenarios/cluster-faults.js';
import { SHORT } from './scenarios/common.js';

/**
 * Scale-out, issue 11: a partition leader dies under two workers, at the short size
 * (20,000 messages, about 35-50 s), on its own: `npx vitest run --project faults
 * test/faults/leader-kill.test.ts` (full.test.ts runs it with 100,000). A private 3-node
 * cluster (its own ports, so the shared single broker is untouched); Elasticsearch and Redis
 * are the local stack's. The check at the end is the fault suite's independent one.
 *
 * Not in `npm test` yet: it fails in about one run of three, on a real fault of the worker
 * (triggers lost and dead letters sent twice after a commit fails while the coordinators
 * move; see README, Known limits). It joins the integration project once that is fixed.
 */
describe('a 3-node Kafka cluster', () => {
  let cluster: PrivateKafkaCluster;
  beforeAll(async () => {
    cluster = await startPrivateKafkaCluster();
  });
  afterAll(async () => {
    await cluster?.dispose();
  });

  it('loses nothing and repeats no trigger when the busiest partition leader is SIGKILLed', async () => {
    const r = await leaderKilled({ ...SHORT, messages: 20_000 }, cluster);
    process.stdout.write(`[cluster] ${JSON.stringify(r)}\n`);
    expect(r.lost).toBe(0);
    expect(r.duplicated).toBe(0);
    expect(r.triggers).toBeGreaterThan(0);
    expect(r.poison).toBeGreaterThan(0);
  }, 240_000);
});
