import { afterAll, beforeAll, describe, it } from 'vitest';
import { type ExtraEsNode, startExtraEsNode } from '../../../harness/servers/extra-es-node.js';
import { SHORT } from '../../faults/scenarios/common.js';
import { abortedUpstreamTransactions, hostileInput } from '../../faults/scenarios/input-faults.js';
import { eventsIndexDeleted, rebuildByOffsetReset } from '../../faults/scenarios/operator-faults.js';
import { brokerRestarts, elasticsearchOutages, redisOutages } from '../../faults/scenarios/server-faults.js';
import { killedRepeatedly } from '../../faults/scenarios/worker-faults.js';

/**
 * The short form of the fault suite, in `npm test`: the same scenarios and checks
 * as `npm run test:faults`, at a size that fits CI. The full suite adds group churn, the 429
 * storm and the full sizes (200,000 messages, 10 kills, 30 s / 60 s outages).
 */
describe('faults (short form)', () => {
  let es: ExtraEsNode;
  beforeAll(async () => {
    es = await startExtraEsNode();
  });
  afterAll(async () => {
    await es?.stop();
  });

  it('SIGKILL at 3 random points of the run', () => killedRepeatedly(SHORT).then(() => undefined), 300_000);
  it(
    'Redis down at start, frozen, stopped and flushed',
    () => redisOutages(SHORT).then(() => undefined),
    300_000,
  );
  it(
    'Elasticsearch frozen, then stopped',
    () => elasticsearchOutages(SHORT, es).then(() => undefined),
    300_000,
  );
  it('the Kafka broker restarted', () => brokerRestarts(SHORT).then(() => undefined), 300_000);
  it('an index rebuild by offset reset', () => rebuildByOffsetReset(SHORT).then(() => undefined), 300_000);
  it(
    'the events index deleted with auto-create off',
    () => eventsIndexDeleted(SHORT).then(() => undefined),
    300_000,
  );
  it(
    'aborted upstream transactions and a fenced zombie producer',
    () => abortedUpstreamTransactions(SHORT).then(() => undefined),
    300_000,
  );
  it('hostile input', () => hostileInput(SHORT).then(() => undefined), 300_000);
});
