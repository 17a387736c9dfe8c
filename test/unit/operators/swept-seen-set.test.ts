import { describe, expect, it } from 'vitest';
import { createWindowedIdSet } from '../../../src/model/windowed-id-set.js';
import { createWindowedSeenSet } from '../../../src/operators/swept-seen-set.js';

// The dedup window's two sets share one contract: the Set of any keys, and the one for
// message ids kept off the V8 heap (windowed-id-set.test.ts has its own cases on top).
describe.each([
  ['createWindowedSeenSet', (w: number, now: () => number) => createWindowedSeenSet<string>(w, now)],
  ['createWindowedIdSet', createWindowedIdSet],
] as const)('%s, the window contract', (_name, create) => {
  it('admits a key once per window, half-open at the end', () => {
    let t = 100;
    const seen = create(10, () => t);
    expect(seen.admit('k')).toBe(true);
    t = 109;
    expect(seen.admit('k')).toBe(false);
    t = 110;
    expect(seen.admit('k')).toBe(true);
    t = 119;
    expect(seen.admit('k')).toBe(false);
  });
  it('forgets expired keys (a key re-sent after expiry passes), keeps the others', () => {
    let t = 0;
    const seen = create(10, () => t);
    seen.admit('old');
    t = 5;
    seen.admit('young');
    expect(seen.emptyAt).toBe(15);
    t = 10;
    seen.evictExpired();
    expect(seen.size).toBe(1);
    expect(seen.admit('young')).toBe(false);
    expect(seen.admit('old')).toBe(true);
    expect(seen.emptyAt).toBe(20);
  });
  it('clear() forgets everything', () => {
    const seen = create(10, () => 0);
    seen.admit('a');
    seen.clear();
    expect(seen.size).toBe(0);
    expect(seen.admit('a')).toBe(true);
  });
});

describe('createWindowedSeenSet', () => {
  it('rejects a window that is not a finite number > 0', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createWindowedSeenSet(bad, () => 0)).toThrow(RangeError);
      expect(() => createWindowedSeenSet(bad, () => 0)).toThrow(/windowMs/);
    }
  });

  it('keeps its size bounded by one window over 100k distinct keys', () => {
    let t = 0;
    const seen = createWindowedSeenSet<number>(10, () => t);
    let maxSize = 0;
    let admitted = 0;
    for (let i = 0; i < 100_000; i++) {
      t = i * 0.5; // two keys per ms: a 10 ms window holds 20 of them
      if (seen.admit(i)) admitted++;
      maxSize = Math.max(maxSize, seen.size);
    }
    expect(admitted).toBe(100_000);
    expect(maxSize).toBe(20);

    t += 10;
    seen.evictExpired();
    expect(seen.size).toBe(0);
    expect(seen.emptyAt).toBeUndefined();
  });

  it('stays correct across queue compactions', () => {
    let t = 0;
    const seen = createWindowedSeenSet<number>(3000, () => t);
    // A window of 3000 values: the head passes the compaction threshold with keys still held.
    const wrong: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      t = i;
      const ok = seen.admit(i) && !(i >= 2999 && seen.admit(i - 2999)) && seen.size === Math.min(i + 1, 3000);
      if (!ok) wrong.push(i);
    }
    expect(wrong).toEqual([]);
    t = 10_000;
    expect(seen.admit(7000)).toBe(true);
    expect(seen.admit(7001)).toBe(false);
  });
});
