import { describe, expect, it } from 'vitest';
import {
  intakePaused,
  recordsPerCommit,
  UNCOMMITTED_PER_HIGH_WATER,
} from '../../../../src/pushback/intake/marks.js';

const marks = { highWater: 2_000, lowWater: 1_000, highWaterBytes: 16 * 1024 * 1024 };
const load = (inGraph: number, uncommitted: number, bytes = 0) => ({ inGraph, uncommitted, bytes });
const k = UNCOMMITTED_PER_HIGH_WATER;

describe('intakePaused', () => {
  it('pauses at HIGH_WATER records in the graph', () => {
    expect(intakePaused(load(1_999, 1_999), marks)).toBeUndefined();
    expect(intakePaused(load(2_000, 2_000), marks)).toBe(true);
  });

  it('lets records that are done and wait for their commit go past HIGH_WATER, up to its multiple', () => {
    expect(intakePaused(load(500, 3_000), marks)).toBe(false);
    expect(intakePaused(load(500, k * 2_000 - 1), marks)).toBeUndefined();
    expect(intakePaused(load(500, k * 2_000), marks), 'a slow commit still pauses intake').toBe(true);
  });

  it('pauses at HIGH_WATER_BYTES whatever the record count', () => {
    expect(intakePaused(load(10, 10, marks.highWaterBytes), marks)).toBe(true);
  });

  it('resumes only once the graph, the uncommitted records and the bytes are all under their low marks', () => {
    expect(intakePaused(load(1_000, k * 1_000, marks.highWaterBytes / 2), marks)).toBe(false);
    expect(intakePaused(load(1_001, 1_001), marks), 'graph above LOW_WATER').toBeUndefined();
    expect(intakePaused(load(900, k * 1_000 + 1), marks), 'uncommitted above its low mark').toBeUndefined();
    expect(
      intakePaused(load(900, 900, marks.highWaterBytes / 2 + 1), marks),
      'bytes above half',
    ).toBeUndefined();
  });
});

describe('recordsPerCommit', () => {
  it('is COMMIT_EVERY while that is below what a paused partition must commit to resume', () => {
    expect(recordsPerCommit({ ...marks, commitEvery: 100 })).toBe(100);
    expect(recordsPerCommit({ ...marks, commitEvery: k * 1_000 - 1 })).toBe(k * 1_000 - 1);
  });

  it('is at most UNCOMMITTED_PER_HIGH_WATER × (HIGH_WATER − LOW_WATER), not HIGH_WATER − LOW_WATER', () => {
    expect(recordsPerCommit({ ...marks, commitEvery: 5_000 })).toBe(k * (2_000 - 1_000));
    expect(k * (2_000 - 1_000), 'the count the graph committed at before').toBeGreaterThan(2_000 - 1_000);
  });

  it('lets a partition paused for its uncommitted records resume after one commit by count', () => {
    for (const [highWater, lowWater] of [
      [2_000, 1_000],
      [10, 0],
      [7, 6],
    ] as const) {
      const m = { highWater, lowWater, highWaterBytes: marks.highWaterBytes };
      const every = recordsPerCommit({ ...m, commitEvery: 1_000_000 });
      // Paused with k × HIGH_WATER uncommitted, all of them done: one commit of `every` records.
      expect(intakePaused(load(0, k * highWater), m)).toBe(true);
      expect(intakePaused(load(0, k * highWater - every), m), `${highWater}/${lowWater}`).toBe(false);
    }
  });

  it('is at least one record', () => {
    expect(recordsPerCommit({ highWater: 5, lowWater: 5, commitEvery: 5_000 })).toBe(1);
  });
});
