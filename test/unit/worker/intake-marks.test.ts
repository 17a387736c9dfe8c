import { describe, expect, it } from 'vitest';
import { intakePaused, UNCOMMITTED_PER_HIGH_WATER } from '../../../src/worker/intake-marks.js';

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
