import { describe, expect, it } from 'vitest';
import { nextHotSet } from '../../../../src/pushback/hot-clients/hot-set-policy.js';
import { SpaceSaving } from '../../../../src/pushback/hot-clients/space-saving.js';
import { prng } from '../../../support/data/random.js';

describe('SpaceSaving', () => {
  it('finds the heavy hitters of a skewed stream with memory bounded by its capacity', () => {
    const random = prng(3);
    const sketch = new SpaceSaving(32);
    const truth = new Map<string, number>();
    // 100,000 messages: 3 clients at 10% each, the rest spread over 50,000 clients.
    for (let i = 0; i < 100_000; i++) {
      const r = random();
      const key =
        r < 0.1 ? 'hot-a' : r < 0.2 ? 'hot-b' : r < 0.3 ? 'hot-c' : `c-${Math.floor(random() * 50_000)}`;
      truth.set(key, (truth.get(key) ?? 0) + 1);
      sketch.add(key);
    }
    expect(sketch.size).toBe(32);
    expect(sketch.total).toBe(100_000);
    const top = sketch.top(3);
    expect(top.map((t) => t.key).sort()).toEqual(['hot-a', 'hot-b', 'hot-c']);
    for (const t of top) {
      // The true count lies within [count − error, count].
      expect(truth.get(t.key)!).toBeLessThanOrEqual(t.count);
      expect(truth.get(t.key)!).toBeGreaterThanOrEqual(t.count - t.error);
    }
  });

  it('keeps every key whose count exceeds total / capacity, and bounds every estimate', () => {
    const random = prng(9);
    const sketch = new SpaceSaving(20);
    const truth = new Map<string, number>();
    for (let i = 0; i < 20_000; i++) {
      // Zipf-like: key k with weight 1/k.
      const k = Math.floor(1 / (random() + 1e-3));
      const key = `k${k}`;
      truth.set(key, (truth.get(key) ?? 0) + 1);
      sketch.add(key);
    }
    const tracked = new Map(sketch.top().map((t) => [t.key, t]));
    for (const [key, n] of truth) if (n > 20_000 / 20) expect(tracked.has(key)).toBe(true);
    for (const t of tracked.values()) {
      expect(truth.get(t.key) ?? 0).toBeLessThanOrEqual(t.count);
      expect(truth.get(t.key) ?? 0).toBeGreaterThanOrEqual(t.count - t.error);
    }
  });

  it('counts exactly while there is room, and clear() starts over', () => {
    const s = new SpaceSaving(4);
    for (const k of ['a', 'b', 'a', 'c', 'a', 'b']) s.add(k);
    expect(s.top()).toEqual([
      { key: 'a', count: 3, error: 0 },
      { key: 'b', count: 2, error: 0 },
      { key: 'c', count: 1, error: 0 },
    ]);
    s.add('d', 5);
    s.add('e'); // evicts the smallest (c, 1)
    expect(s.top().find((t) => t.key === 'e')).toEqual({ key: 'e', count: 2, error: 1 });
    expect(s.top().some((t) => t.key === 'c')).toBe(false);
    s.clear();
    expect(s.size).toBe(0);
    expect(s.total).toBe(0);
  });
});

describe('nextHotSet', () => {
  const s = { enterRatePerSec: 1000, leaveRatePerSec: 500 };
  const rates = (r: Record<string, [number, number]>) =>
    new Map(Object.entries(r).map(([k, [lowPerSec, highPerSec]]) => [k, { lowPerSec, highPerSec }]));

  it('a client enters when even its lower bound reaches the enter rate', () => {
    const next = nextHotSet(new Set(), rates({ a: [1000, 1100], b: [900, 1500] }), s);
    expect([...next.hot]).toEqual(['a']);
    expect(next.entered).toEqual(['a']);
  });

  it('a hot client stays between the two rates and leaves only below the leave rate (hysteresis)', () => {
    let hot = new Set(['a']);
    const steps = [
      [700, 800],
      [450, 520],
      [300, 499],
      [900, 990],
    ] as [number, number][];
    const trace = steps.map(([lo, hi]) => {
      const next = nextHotSet(hot, rates({ a: [lo, hi] }), s);
      hot = next.hot;
      return hot.has('a');
    });
    expect(trace).toEqual([true, true, false, false]);
  });

  it('a hot client that sends nothing any more leaves', () => {
    expect(nextHotSet(new Set(['gone']), new Map(), s)).toEqual({
      hot: new Set(),
      entered: [],
      left: ['gone'],
    });
  });

  it('an enter rate of 0 turns it off', () => {
    expect(nextHotSet(new Set(['a']), rates({ a: [1e6, 1e6] }), { ...s, enterRatePerSec: 0 }).hot.size).toBe(
      0,
    );
  });
});
