import { describe, expect, it } from 'vitest';
import type { BreakerState } from '../../../../src/pushback/admission/circuit-breaker.js';
import {
  NOTHING_SHED,
  nextShedState,
  type ShedPolicySettings,
  type ShedState,
  shedChanges,
} from '../../../../src/pushback/shedding/policy.js';

const settings: ShedPolicySettings = {
  topics: ['orders', 'inventory', 'reviews', 'backfill'],
  priorities: new Map([
    ['orders', 'high'],
    ['reviews', 'low'],
    ['backfill', 'low'],
  ]),
  lagHigh: 1000,
  lagLow: 100,
  minShedMs: 30_000,
};

/** Runs the policy over a sequence of observations. */
function run(
  steps: { at: number; breaker?: BreakerState; lag?: Record<string, number>; manual?: string[] }[],
  s = settings,
) {
  let state: ShedState = NOTHING_SHED;
  const seen: ShedState[] = [];
  for (const step of steps) {
    state = nextShedState(
      state,
      {
        nowMs: step.at,
        breaker: step.breaker ?? 'closed',
        lag: new Map(Object.entries(step.lag ?? {})),
        manual: new Set(step.manual ?? []),
      },
      s,
    );
    seen.push(state);
  }
  return seen;
}

const shedTopics = (s: ShedState) => [...s.shed.keys()].sort();

describe('nextShedState', () => {
  it('sheds nothing while healthy', () => {
    const [s] = run([{ at: 0, lag: { orders: 999, reviews: 1e6 } }]);
    expect(shedTopics(s!)).toEqual([]);
  });

  it('sheds the low topics while the breaker is open or half-open, and keeps the high ones', () => {
    const [open, half] = run([
      { at: 0, breaker: 'open' },
      { at: 1000, breaker: 'half-open' },
    ]);
    expect(shedTopics(open!)).toEqual(['backfill', 'reviews']);
    expect(open!.shed.get('reviews')).toBe('breaker');
    expect(shedTopics(half!)).toEqual(['backfill', 'reviews']);
  });

  it('sheds the low topics once the high topics’ total lag reaches the threshold', () => {
    // orders 600 + inventory (unlisted: high) 400 = 1000; the low topics' own lag does not count.
    const [below, at] = run([
      { at: 0, lag: { orders: 600, inventory: 399, reviews: 1e9 } },
      { at: 1, lag: { orders: 600, inventory: 400 } },
    ]);
    expect(shedTopics(below!)).toEqual([]);
    expect(shedTopics(at!)).toEqual(['backfill', 'reviews']);
    expect(at!.shed.get('backfill')).toBe('lag');
  });

  it('resumes only when the lag fell to the low mark and the minimum time passed (hysteresis)', () => {
    const states = run([
      { at: 0, lag: { orders: 5000 } },
      { at: 10_000, lag: { orders: 500 } }, // below the high mark, above the low one
      { at: 20_000, lag: { orders: 50 } }, // low enough, too early
      { at: 30_000, lag: { orders: 50 } }, // resumed
      { at: 31_000, lag: { orders: 900 } }, // not yet at the high mark again
    ]);
    expect(states.map((s) => s.shed.size)).toEqual([2, 2, 2, 0, 0]);
  });

  it('after an outage keeps shedding while the high topics catch up', () => {
    const states = run([
      { at: 0, breaker: 'open' },
      { at: 40_000, breaker: 'closed', lag: { orders: 50_000 } },
      { at: 60_000, lag: { orders: 10 } },
    ]);
    expect(states[0]!.auto?.reason).toBe('breaker');
    expect(states[1]!.auto?.reason).toBe('lag');
    expect(states[1]!.shed.size).toBe(2);
    expect(states[2]!.shed.size).toBe(0);
  });

  it('a manual decision sheds any topic, even a high one, and is labelled manual', () => {
    const [s, t] = run([
      { at: 0, manual: ['orders', 'not-mine'] },
      { at: 1, manual: ['reviews'], breaker: 'open' },
    ]);
    expect([...s!.shed]).toEqual([['orders', 'manual']]);
    expect(t!.shed.get('reviews')).toBe('manual');
    expect(t!.shed.get('backfill')).toBe('breaker');
    expect(t!.shed.has('orders')).toBe(false);
  });

  it('never sheds automatically without both a high and a low topic', () => {
    const onlyHigh = { ...settings, priorities: new Map() };
    expect(shedTopics(run([{ at: 0, breaker: 'open', lag: { orders: 1e9 } }], onlyHigh)[0]!)).toEqual([]);
    const allLow = {
      ...settings,
      priorities: new Map(settings.topics.map((t) => [t, 'low' as const])),
    };
    expect(shedTopics(run([{ at: 0, breaker: 'open' }], allLow)[0]!)).toEqual([]);
  });

  it('with lagHigh 0, lag never sheds (the breaker still does)', () => {
    const off = { ...settings, lagHigh: 0 };
    expect(run([{ at: 0, lag: { orders: 1e9 } }], off)[0]!.shed.size).toBe(0);
    expect(run([{ at: 0, breaker: 'open' }], off)[0]!.shed.size).toBe(2);
  });
});

describe('shedChanges', () => {
  it('lists topics to pause and to resume', () => {
    const [a, b] = run([
      { at: 0, manual: ['orders'] },
      { at: 1, breaker: 'open' },
    ]);
    expect(shedChanges(a!, b!)).toEqual({ shed: ['reviews', 'backfill'], resumed: ['orders'] });
    expect(shedChanges(b!, b!)).toEqual({ shed: [], resumed: [] });
  });
});
