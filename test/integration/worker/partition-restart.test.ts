import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { waitFor } from '../../../harness/stack.js';
import { linesStarting } from '../../../harness/worker/observation.js';
import { TransactionalCommitter } from '../../../src/sinks/kafka/transactional-committer.js';

const MESSAGES = 600;

let p: Pipeline;

beforeAll(async () => {
  p = await Pipeline.create('restart-first', { partitions: 1 });
});

afterAll(async () => {
  await p?.cleanup();
});

describe('a partition restarted before its first commit', () => {
  it('takes again from where the failed runner started, not from where kafkajs fetched to', async () => {
    await p.produce(traffic(31, MESSAGES));
    // A zombie with the partition's transactional id keeps bumping the producer epoch, so the
    // worker's first commit (held back 3 s) is fenced and its runner replaced while the group
    // still has no committed offset for the partition.
    const transactionalId = TransactionalCommitter.transactionalId(p.names.group, p.names.topic, 0);
    let fencing = true;
    const zombie = (async () => {
      while (fencing) {
        const producer: Producer = p.kafka.producer({
          transactionalId,
          idempotent: true,
          maxInFlightRequests: 1,
        });
        await producer.connect();
        await (await producer.transaction()).abort();
        await producer.disconnect();
      }
    })();
    const w = p.spawn('w', { COMMIT_INTERVAL_MS: '3000', COMMIT_EVERY: '100000' });
    try {
      await waitFor('the first commit to be fenced', () => linesStarting(w, 'partition fenced').length > 0, {
        timeoutMs: 60_000,
      });
    } finally {
      fencing = false;
      await zombie;
    }
    await p.waitForEnd(90_000);
    await p.assertContract(p.expected());
    // The case this is about happened: a runner started again with nothing committed.
    const startsWithNothingCommitted = linesStarting(w, 'partition assigned').filter(
      (l) => l.committed === 'none',
    );
    expect(startsWithNothingCommitted.length).toBeGreaterThanOrEqual(2);
  }, 180_000);
});
