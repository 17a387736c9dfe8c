import { afterAll, beforeAll, describe, it } from 'vitest';
import { type ExtraEsNode, startExtraEsNode } from '../../harness/servers/extra-es-node.js';
import { startPrivateKafkaCluster } from '../../harness/servers/private-kafka-cluster.js';
import { leaderKilled } from './scenarios/cluster-faults.js';
import { FULL, type ScenarioReport } from './scenarios/common.js';
import { abortedUpstreamTransactions, hostileInput } from './scenarios/input-faults.js';
import { eventsIndexDeleted, rebuildByOffsetReset } from './scenarios/operator-faults.js';
import {
  brokerRestarts,
  elasticsearchOutages,
  redisOutages,
  rejectionStorm,
} from './scenarios/server-faults.js';
import { groupChurn, killedRepeatedly } from './scenarios/worker-faults.js';

/**
 * The fault suite (`npm run test:faults`): every fault scenario at full size, each
 * ending with the independent expected-state check. Servers that are frozen, stopped or
 * restarted are private ones; the rest is the local stack. The figures are printed at the end.
 */
const reports: ScenarioReport[] = [];
const run = (fn: () => Promise<ScenarioReport>) => async () => {
  reports.push(await fn());
};

describe('faults (full)', () => {
  let es: ExtraEsNode;
  beforeAll(async () => {
    es = await startExtraEsNode({ heap: '768m' });
  });
  afterAll(async () => {
    await es?.stop();
    process.stdout.write(`\n[faults] summary\n${reports.map((r) => `  ${JSON.stringify(r)}`).join('\n')}\n`);
  });

  it(
    'SIGKILL at 10 random points of a 200,000-message run',
    run(() => killedRepeatedly(FULL)),
  );
  it(
    'three workers in one group with kills and additions; versions never go backwards',
    run(() => groupChurn(FULL)),
  );
  it(
    'Elasticsearch frozen 30 s, then stopped 60 s',
    run(() => elasticsearchOutages(FULL, es)),
  );
  it(
    'a real 429 storm',
    run(() => rejectionStorm({ ...FULL, messages: 50_000 })),
  );
  it(
    'Redis down at start, frozen, stopped and flushed',
    run(() => redisOutages({ ...FULL, messages: 100_000, outageMs: 15_000 })),
  );
  it(
    'the Kafka broker restarted',
    run(() => brokerRestarts({ ...FULL, messages: 100_000 })),
  );
  it(
    'the busiest partition leader SIGKILLed on a 3-node cluster',
    run(async () => {
      const cluster = await startPrivateKafkaCluster();
      try {
        return await leaderKilled({ ...FULL, messages: 100_000 }, cluster);
      } finally {
        await cluster.dispose();
      }
    }),
  );
  it(
    'an index rebuild by offset reset',
    run(() => rebuildByOffsetReset({ ...FULL, messages: 100_000 })),
  );
  it(
    'the events index deleted with auto-create off',
    run(() => eventsIndexDeleted({ ...FULL, messages: 60_000 })),
  );
  it(
    'aborted upstream transactions and a fenced zombie producer',
    run(() => abortedUpstreamTransactions(FULL)),
  );
  it(
    'hostile input',
    run(() => hostileInput(FULL)),
  );
});
