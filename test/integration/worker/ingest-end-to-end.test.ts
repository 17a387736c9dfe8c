import { afterEach, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { planWorkload, type WorkloadRecord } from '../../../src/generator/workload.js';

/**
 * The contract end to end, against the real Kafka, Elasticsearch and Redis: 20,000
 * messages over 8 partitions and 200 clients, 2% re-sent ids (inside and far outside the
 * dedup window), profile versions shuffled and a few clients' updates spread over other
 * partitions, 1% poison, 1% hostile field names, one trigger rule. The expected state is
 * computed independently (harness/deployment/expected-state.ts).
 */
describe('worker end to end', () => {
  let pipeline: Pipeline | undefined;
  afterEach(async () => {
    await pipeline?.cleanup();
    pipeline = undefined;
  });

  function workload(seed: number): WorkloadRecord[] {
    const plan = planWorkload({
      seed,
      count: 20_000,
      ratePerSec: 8_000,
      clients: 200,
      duplicateShare: 0.01,
      duplicateDelayMs: { min: 10, max: 500 }, // inside the 1 s window
      lateDuplicateShare: 0.01,
      lateDuplicateDelayMs: { min: 2_000, max: 3_000 }, // far outside it: Redis or Elasticsearch catch these
      poisonShare: 0.01,
      hostileKeyShare: 0.01,
      shuffleVersions: 0.1,
    });
    // A few clients' profile updates go out under other keys, so other partitions carry them:
    // the merge must hold when partitions race on one profile document.
    const spread = new Set(['c-0001', 'c-0002', 'c-0003']);
    let n = 0;
    return plan.map((r) =>
      r.kind === 'profile' && r.clientId !== undefined && spread.has(r.clientId)
        ? { ...r, key: `${r.clientId}#${n++}` }
        : r,
    );
  }

  it('ingests 20,000 messages to exactly the contract state', async () => {
    const p = await Pipeline.create('e2e');
    pipeline = p;
    const worker = p.spawn('worker');
    await p.produce(workload(11));
    const expected = p.expected();
    expect(expected.poison.length).toBeGreaterThan(100);
    expect(expected.duplicates).toBeGreaterThan(200);
    expect(expected.triggers.size).toBeGreaterThan(100);
    await p.waitForEnd();
    await p.assertContract(expected);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });

  it('reaches the same state when the worker is SIGKILLed mid-run and started again', async () => {
    const p = await Pipeline.create('e2e-kill');
    pipeline = p;
    const first = p.spawn('first');
    await p.produce(workload(12));
    // Kill it while work is committed in part: some triggers out, some not yet.
    await p.waitCommitted(6_000, 60_000);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(await p.committedTotal()).toBeLessThan(20_000);
    const second = p.spawn('second');
    await p.waitForEnd();
    await p.assertContract(p.expected());
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('reaches the same state with two workers sharing the group while one of them leaves', async () => {
    const p = await Pipeline.create('e2e-two');
    pipeline = p;
    const a = p.spawn('a');
    const b = p.spawn('b');
    await p.produce(workload(13));
    await p.waitCommitted(6_000, 60_000);
    // A leaves cleanly mid-run: it drains and commits before leaving, then B takes its partitions.
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    await p.waitForEnd();
    await p.assertContract(p.expected());
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  });
});
