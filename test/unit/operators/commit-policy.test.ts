import { describe, expect, it } from 'vitest';
import { type CommitPolicy, nextCommitStep, stayedQuiet } from '../../../src/operators/commit-policy.js';

const policy: CommitPolicy = { intervalMs: 1_000, every: 100, quiet: { ms: 50, records: 10 } };
const state = (released: number, pending = 0, sourceDone = false) => ({ released, pending, sourceDone });

describe('nextCommitStep', () => {
  it('commits at once when `every` records became committable', () => {
    expect(nextCommitStep(policy, state(100, 5))).toEqual({ kind: 'commit' });
    expect(nextCommitStep(policy, state(250, 5))).toEqual({ kind: 'commit' });
  });

  it('commits when the source completed, committable or not (the flush, or the end)', () => {
    expect(nextCommitStep(policy, state(3, 0, true))).toEqual({ kind: 'commit' });
    expect(nextCommitStep(policy, state(0, 0, true))).toEqual({ kind: 'commit' });
  });

  it('is idle with nothing committable', () => {
    expect(nextCommitStep(policy, state(0, 7))).toEqual({ kind: 'idle' });
  });

  it('waits for the interval while fewer than `every` are committable and work is still in the graph', () => {
    expect(nextCommitStep(policy, state(99, 1))).toEqual({ kind: 'wait' });
  });

  it('waits for the quiet time too once a burst is committable and every record taken in is done', () => {
    expect(nextCommitStep(policy, state(10, 0))).toEqual({ kind: 'wait', quietMs: 50 });
    expect(nextCommitStep(policy, state(60, 0))).toEqual({ kind: 'wait', quietMs: 50 });
  });

  it('keeps a trickle to the interval: fewer than `quiet.records` committable never wait for quiet', () => {
    expect(nextCommitStep(policy, state(9, 0))).toEqual({ kind: 'wait' });
  });

  it('has no quiet wait without `quiet`, or when it is not shorter than the interval', () => {
    expect(nextCommitStep({ intervalMs: 1_000, every: 100 }, state(50, 0))).toEqual({ kind: 'wait' });
    const longQuiet = { intervalMs: 1_000, every: 100, quiet: { ms: 1_000, records: 1 } };
    expect(nextCommitStep(longQuiet, state(50, 0))).toEqual({ kind: 'wait' });
  });
});

describe('stayedQuiet', () => {
  it('holds while nothing came in and nothing is in the graph', () => {
    expect(stayedQuiet({ pending: 0, registered: 40 }, { pending: 0, registered: 40 })).toBe(true);
  });

  it('breaks when a record came in, even one done already', () => {
    expect(stayedQuiet({ pending: 0, registered: 40 }, { pending: 0, registered: 41 })).toBe(false);
    expect(stayedQuiet({ pending: 0, registered: 40 }, { pending: 1, registered: 41 })).toBe(false);
  });
});
