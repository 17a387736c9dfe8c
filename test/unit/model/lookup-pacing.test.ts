import { describe, expect, it } from 'vitest';
import { FIRST_BACKOFF_MS, LookupPacing } from '../../../src/model/lookup-pacing.js';
import { lookupWaits } from '../../../src/operators/skip-known-copies.js';

/** Paced as the operator paces it (0: not paced). */
const pacedUpTo = (maxMs: number) => new LookupPacing(lookupWaits(maxMs));

describe('LookupPacing', () => {
  it('looks up the first batch, then waits after each lookup that finds no copy: 50 ms, twice as long each time, up to the most', () => {
    const p = pacedUpTo(300);
    expect(p.due(0)).toBe(true);
    const waits: number[] = [];
    let now = 0;
    for (let i = 0; i < 5; i++) {
      p.answered(false, now);
      let next = now;
      while (!p.due(next)) next++;
      waits.push(next - now);
      now = next;
    }
    expect(waits).toEqual([FIRST_BACKOFF_MS, 100, 200, 300, 300]);
  });

  it('a lookup that finds a copy brings back a lookup for every batch, and the waits start again from 50 ms', () => {
    const p = pacedUpTo(1000);
    p.answered(false, 0);
    p.answered(false, 50);
    expect(p.due(149)).toBe(false);
    p.answered(true, 150);
    expect(p.due(150)).toBe(true);
    expect(p.due(151)).toBe(true);
    p.answered(false, 200);
    expect(p.due(249)).toBe(false);
    expect(p.due(250)).toBe(true);
  });

  it('with a most of 0 every batch is looked up, whatever the lookups found', () => {
    const p = pacedUpTo(0);
    for (let t = 0; t < 5; t++) {
      p.answered(false, t);
      expect(p.due(t)).toBe(true);
    }
  });

  it('a most below the first wait caps that one too', () => {
    const p = pacedUpTo(20);
    p.answered(false, 0);
    expect(p.due(19)).toBe(false);
    expect(p.due(20)).toBe(true);
  });
});
