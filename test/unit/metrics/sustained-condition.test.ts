import { describe, expect, it } from 'vitest';
import { SustainedCondition } from '../../../src/metrics/sustained-condition.js';

describe('SustainedCondition', () => {
  it('starts once the condition has held for the whole hold time, and only once', () => {
    const c = new SustainedCondition(60_000);
    const changes = [0, 30_000, 59_999, 60_000, 61_000, 120_000].map((t) => c.sample(true, t));
    expect(changes).toEqual([undefined, undefined, undefined, 'started', undefined, undefined]);
    expect(c.isActive).toBe(true);
  });

  it('ends at the first sample where it no longer holds, once', () => {
    const c = new SustainedCondition(1_000);
    c.sample(true, 0);
    expect(c.sample(true, 1_000)).toBe('started');
    expect(c.sample(false, 1_500)).toBe('ended');
    expect(c.sample(false, 2_000)).toBeUndefined();
    expect(c.isActive).toBe(false);
  });

  it('restarts the wait after a single dip', () => {
    const c = new SustainedCondition(60_000);
    c.sample(true, 0);
    c.sample(false, 50_000);
    expect(c.sample(true, 51_000)).toBeUndefined();
    expect(c.sample(true, 110_000)).toBeUndefined();
    expect(c.heldFor(110_000)).toBe(59_000);
    expect(c.sample(true, 111_000)).toBe('started');
  });

  it('never starts for a condition that does not hold', () => {
    const c = new SustainedCondition(10);
    expect([0, 100, 1_000].map((t) => c.sample(false, t))).toEqual([undefined, undefined, undefined]);
  });
});
