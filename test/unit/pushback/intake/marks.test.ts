import { describe, expect, it } from 'vitest';
import {
  fetchBytesPerPartition,
  intakePaused,
  LEAST_FETCH_BYTES,
  partitionShare,
  recordsPerCommit,
  sharedMarks,
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

describe('partitionShare: a few partitions share the budget of INTAKE_SHARE_PARTITIONS', () => {
  it('gives each of fewer partitions the rest of the budget, and never less than its own marks', () => {
    expect(partitionShare(1, 8)).toBe(8);
    expect(partitionShare(4, 8)).toBe(2);
    expect(partitionShare(8, 8)).toBe(1);
    expect(partitionShare(32, 8), 'many partitions keep their own marks').toBe(1);
    expect(partitionShare(3, 8)).toBeCloseTo(8 / 3);
  });

  it("with more than 4 × INTAKE_SHARE_PARTITIONS, gives each its part of that many partitions' worth, never below the floor", () => {
    expect(partitionShare(33, 8)).toBeCloseTo(32 / 33);
    expect(partitionShare(96, 8)).toBeCloseTo(1 / 3);
    expect(partitionShare(96, 8, 0.25), 'above the floor').toBeCloseTo(1 / 3);
    expect(partitionShare(256, 8, 0.25), 'a partition still holds a full batch').toBe(0.25);
    // The worker's records in graphs stop growing: 96 partitions hold what 32 do.
    expect(96 * partitionShare(96, 8)).toBeCloseTo(32 * partitionShare(32, 8));
  });

  it('is 1 with sharing off (1), and counts nothing assigned yet as one partition', () => {
    expect(partitionShare(1, 1)).toBe(1);
    expect(partitionShare(96, 1), 'off at any count').toBe(1);
    expect(partitionShare(0, 8)).toBe(8);
  });

  it('scales the record marks of a partition by its share, so that one partition holds what the budget holds; not the byte window', () => {
    expect(sharedMarks(marks, 4)).toEqual({
      highWater: 8_000,
      lowWater: 4_000,
      highWaterBytes: 16 * 1024 * 1024,
    });
    expect(sharedMarks(marks, 1)).toBe(marks);
    // A lone partition of a worker with a budget of 8 pauses where 8 partitions would all be full.
    const lone = sharedMarks(marks, partitionShare(1, 8));
    expect(intakePaused(load(8 * 2_000 - 1, 8 * 2_000 - 1), lone)).toBeUndefined();
    expect(intakePaused(load(8 * 2_000, 8 * 2_000), lone)).toBe(true);
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

describe('fetchBytesPerPartition: the fetches are shared out like the marks', () => {
  const kb256 = 256 * 1024;

  it('keeps KAFKA_MAX_BYTES_PER_PARTITION up to MOST_SHARES × INTAKE_SHARE_PARTITIONS partitions', () => {
    for (const n of [1, 4, 8, 32]) expect(fetchBytesPerPartition(kb256, n, 8), `${n}`).toBe(kb256);
  });

  it('scales it past them, so that the fetches in flight stop growing with the partitions', () => {
    expect(fetchBytesPerPartition(kb256, 48, 8)).toBe(Math.round((kb256 * 32) / 48));
    expect(fetchBytesPerPartition(4 * kb256, 128, 8) * 128).toBe(4 * kb256 * 32);
  });

  it('never goes below LEAST_FETCH_BYTES, nor raises a smaller setting to it', () => {
    expect(fetchBytesPerPartition(kb256, 96, 8)).toBe(LEAST_FETCH_BYTES);
    expect(fetchBytesPerPartition(kb256, 1_024, 8)).toBe(LEAST_FETCH_BYTES);
    expect(fetchBytesPerPartition(16 * 1024, 1_024, 8)).toBe(16 * 1024);
  });

  it('is never scaled with INTAKE_SHARE_PARTITIONS=1', () => {
    expect(fetchBytesPerPartition(kb256, 1_024, 1)).toBe(kb256);
  });
});
