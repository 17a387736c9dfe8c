import { describe, expect, it } from 'vitest';
import { createWindowedIdSet } from '../../../src/model/windowed-id-set.js';
import { createWindowedSeenSet } from '../../../src/operators/swept-seen-set.js';

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The hash the set uses, over the same encoding: to build keys that collide on purpose. */
function fnv(key: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    const units = c < 0xff ? [c] : [0xff, c >>> 8, c & 0xff];
    for (const b of units) h = Math.imul(h ^ b, 0x01000193);
  }
  return h;
}

// The window's contract (half-open windows, expiry, clear) is shared with the Set version:
// swept-seen-set.test.ts runs it on both.
describe('createWindowedIdSet', () => {
  it('answers exactly as the Set-based window on random keys, times and repeats', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const next = rng(seed);
      let t = 0;
      const compact = createWindowedIdSet(50, () => t, 1);
      const reference = createWindowedSeenSet<string>(50, () => t);
      const alphabet = [
        'a',
        'b',
        'é',
        'ß',
        '\u0100',
        '\uffff',
        '\ud83d',
        '\ude00',
        '0',
        '-',
        '\u00fe',
        '\u00ff',
      ];
      const recent: string[] = [];
      const differ: string[] = [];
      for (let i = 0; i < 20_000; i++) {
        t += Math.floor(next() * 3); // bursts at one instant, and gaps
        let key: string;
        if (recent.length > 0 && next() < 0.3) key = recent[Math.floor(next() * recent.length)] as string;
        else {
          const len = 1 + Math.floor(next() * (next() < 0.05 ? 600 : 12));
          key = '';
          for (let j = 0; j < len; j++) key += alphabet[Math.floor(next() * alphabet.length)];
          recent.push(key);
          if (recent.length > 200) recent.shift();
        }
        const a = compact.admit(key);
        const b = reference.admit(key);
        if (a !== b) differ.push(`seed ${seed} #${i} ${JSON.stringify(key)}: ${a} vs ${b}`);
        if (compact.size !== reference.size)
          differ.push(`seed ${seed} #${i}: size ${compact.size} vs ${reference.size}`);
      }
      expect(differ.slice(0, 5)).toEqual([]);
    }
  });

  it('tells apart different keys with the same hash (a hash hit is never taken for a repeat)', () => {
    const byHash = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined; i++) {
      const key = `id-${i}`;
      const h = fnv(key);
      const other = byHash.get(h);
      if (other !== undefined) pair = [other, key];
      else byHash.set(h, key);
    }
    const [a, b] = pair;
    expect(fnv(a)).toBe(fnv(b));
    const seen = createWindowedIdSet(10, () => 0);
    expect(seen.admit(a)).toBe(true);
    expect(seen.admit(b)).toBe(true);
    expect(seen.admit(a)).toBe(false);
    expect(seen.admit(b)).toBe(false);
  });

  it('keeps keys that differ only past the ASCII range or in length apart', () => {
    const seen = createWindowedIdSet(10, () => 0);
    // \u00ff would encode as the escape byte itself if the encoding were not injective.
    const keys = [
      '\u00ff',
      '\u00ff\u0000',
      '\u0100',
      '\u01ff',
      '\uff00',
      'a',
      'aa',
      'a\u0000',
      '\ud83d\ude00',
    ];
    for (const k of keys) expect(seen.admit(k)).toBe(true);
    for (const k of keys) expect(seen.admit(k)).toBe(false);
    expect(seen.size).toBe(keys.length);
  });

  it('keeps its size bounded by one window over 200k distinct keys, through ring and table growth', () => {
    let t = 0;
    const seen = createWindowedIdSet(10_000, () => t, 1);
    let maxSize = 0;
    let admitted = 0;
    for (let i = 0; i < 200_000; i++) {
      t = i * 0.25; // four keys per ms: a 10 s window holds 40,000 of them
      if (seen.admit(`9ce301f0-b882-4f5c-ad01-${String(i).padStart(12, '0')}`)) admitted++;
      maxSize = Math.max(maxSize, seen.size);
    }
    expect(admitted).toBe(200_000);
    expect(maxSize).toBe(40_000);
    // Still held: the last window's keys; gone: the earlier ones.
    expect(seen.admit(`9ce301f0-b882-4f5c-ad01-${String(199_999).padStart(12, '0')}`)).toBe(false);
    expect(seen.admit(`9ce301f0-b882-4f5c-ad01-${String(100_000).padStart(12, '0')}`)).toBe(true);

    t += 10_000;
    seen.evictExpired();
    expect(seen.size).toBe(0);
    expect(seen.emptyAt).toBeUndefined();
  });

  it('gives the memory of a burst back once its keys expire, and holds a window in about 100 bytes an id', () => {
    let t = 0;
    const seen = createWindowedIdSet(1_000, () => t);
    const idle = seen.footprint;
    for (let i = 0; i < 100_000; i++) seen.admit(`9ce301f0-b882-4f5c-ad01-${String(i).padStart(12, '0')}`);
    const full = seen.footprint;
    expect(full / 100_000).toBeLessThan(110);
    t = 1_000;
    for (let i = 0; i < 10; i++) seen.admit(`after-${i}`);
    expect(seen.size).toBe(10);
    expect(seen.footprint).toBeLessThan(full / 8);
    t = 2_000;
    seen.evictExpired();
    expect(seen.footprint).toBe(idle);
  });

  it('holds ids up to Elasticsearch’s 512-byte limit, and longer', () => {
    const seen = createWindowedIdSet(10, () => 0, 1);
    const long = (c: string, n: number) => c.repeat(n);
    for (const k of [long('x', 512), long('\u4e00', 512), long('y', 5000), long('\u4e00', 30_000)]) {
      expect(seen.admit(k)).toBe(true);
      expect(seen.admit(k)).toBe(false);
    }
    expect(seen.admit(`${long('x', 511)}z`)).toBe(true);
  });

  it('refuses a window that is not a finite number > 0', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createWindowedIdSet(bad, () => 0)).toThrow(RangeError);
    }
  });
});
