import { describe, expect, it } from 'vitest';
import {
  type LagPolicySettings,
  nextTopicLag,
  type TopicLagState,
} from '../../../../src/pushback/lag/policy.js';

const s: LagPolicySettings = { lagHigh: 10_000, lagLow: 2_000, headroom: 0.2, minRatePerSec: 10 };

/**
 * A topic fed at `produce` msg/s and drained at most `capacity` msg/s; producers honour the
 * published limit. One sample a second for `seconds`.
 */
function simulate(opts: {
  produce: (t: number) => number;
  capacity: (t: number) => number;
  seconds: number;
}) {
  let state: TopicLagState | undefined;
  let end = 0;
  let committed = 0;
  const trace: TopicLagState[] = [];
  for (let t = 0; t < opts.seconds; t++) {
    const wanted = opts.produce(t);
    const sent = state?.limitPerSec !== undefined ? Math.min(wanted, state.limitPerSec) : wanted;
    end += sent;
    committed = Math.min(end, committed + opts.capacity(t));
    state = nextTopicLag(state, { end, committed }, t * 1000, s);
    trace.push(state);
  }
  return trace;
}

describe('nextTopicLag', () => {
  it('publishes no limit while the group keeps up', () => {
    const trace = simulate({ produce: () => 900, capacity: () => 1000, seconds: 60 });
    expect(trace.every((x) => x.limitPerSec === undefined)).toBe(true);
    expect(trace.at(-1)!.lag).toBe(0);
  });

  it('limits producers once lag grows past the threshold, so that lag stops growing and falls', () => {
    // Producers want 2000 msg/s, the worker drains 1000: lag grows 1000/s until limited.
    const trace = simulate({ produce: () => 2000, capacity: () => 1000, seconds: 120 });
    const first = trace.findIndex((x) => x.limitPerSec !== undefined);
    expect(trace[first]!.lag).toBeGreaterThanOrEqual(10_000);
    expect(trace[first - 1]!.lag).toBeLessThan(10_000);
    // The limit is below the drain rate while lag is high: lag peaks soon after and falls.
    expect(trace[first]!.limitPerSec).toBeLessThan(1000);
    expect(trace[first]!.limitPerSec).toBeGreaterThanOrEqual(700);
    const peak = Math.max(...trace.map((x) => x.lag));
    expect(peak).toBeLessThan(10_000 + 3 * 1000);
    // While producers still want more than the group drains, the limit is never dropped:
    // below the low mark it only grows, the lag rises past the mark again and the drain
    // takes over, so the lag stays between the marks and never again reaches its peak.
    const after = trace.slice(first + 5);
    expect(after.every((x) => x.limitPerSec !== undefined)).toBe(true);
    expect(Math.max(...after.map((x) => x.lag))).toBeLessThan(peak);
    expect(Math.max(...trace.slice(60).map((x) => x.lag))).toBeLessThan(10_000);
  });

  it('waits for a measured drain before a first limit (a worker that just started drains little)', () => {
    let state = nextTopicLag(undefined, { end: 20_000, committed: 0 }, 0, s);
    state = nextTopicLag(state, { end: 21_000, committed: 10 }, 1000, s);
    expect(state.limitPerSec).toBeUndefined();
    state = nextTopicLag(state, { end: 22_000, committed: 910 }, 2000, s);
    expect(state.limitPerSec).toBeUndefined();
    state = nextTopicLag(state, { end: 23_000, committed: 1_810 }, 3000, s);
    expect(state.samples).toBe(3);
    expect(state.limitPerSec).toBeGreaterThan(500);
  });

  it('lifts the limit only once producers no longer use it', () => {
    // Producers want 2000 for 40 s, then 300 (less than the 1000 drained).
    const trace = simulate({ produce: (t) => (t < 40 ? 2000 : 300), capacity: () => 1000, seconds: 120 });
    const lifted = trace.findIndex(
      (x, i) => i > 0 && trace[i - 1]!.limitPerSec !== undefined && x.limitPerSec === undefined,
    );
    expect(lifted).toBeGreaterThan(40);
    expect(trace.slice(lifted).every((x) => x.limitPerSec === undefined)).toBe(true);
  });

  it('raises the limit toward the drain rate as lag falls, and lifts it at the low mark', () => {
    const trace = simulate({
      produce: (t) => (t < 30 ? 3000 : 500),
      capacity: () => 1000,
      seconds: 200,
    });
    const limited = trace.filter((x) => x.limitPerSec !== undefined);
    expect(limited.length).toBeGreaterThan(0);
    // Higher lag, lower limit.
    const hi = limited.reduce((a, b) => (b.lag > a.lag ? b : a));
    const lo = limited.reduce((a, b) => (b.lag < a.lag ? b : a));
    expect(hi.limitPerSec!).toBeLessThan(lo.limitPerSec!);
    expect(trace.at(-1)!.limitPerSec).toBeUndefined();
    expect(trace.at(-1)!.lag).toBeLessThanOrEqual(2_000);
  });

  it('does not limit a high lag that is already falling', () => {
    let state = nextTopicLag(undefined, { end: 50_000, committed: 0 }, 0, s);
    state = nextTopicLag(state, { end: 50_500, committed: 2_000 }, 1000, s);
    expect(state.lag).toBe(48_500);
    expect(state.limitPerSec).toBeUndefined();
  });

  it('slows producers to the minimum rate, not to zero, when the group drains nothing', () => {
    let state = nextTopicLag(undefined, { end: 20_000, committed: 0 }, 0, s);
    for (let t = 1; t <= 3; t++)
      state = nextTopicLag(state, { end: 20_000 + t * 1000, committed: 0 }, t * 1000, s);
    expect(state.limitPerSec).toBe(10);
  });

  it('measures the drain and produce rates', () => {
    let state = nextTopicLag(undefined, { end: 0, committed: 0 }, 0, s);
    state = nextTopicLag(state, { end: 3000, committed: 2000 }, 2000, s);
    expect(state.producePerSec).toBe(1500);
    expect(state.drainPerSec).toBe(1000);
  });

  it('with lagHigh 0 never limits', () => {
    const off = { ...s, lagHigh: 0 };
    let state = nextTopicLag(undefined, { end: 0, committed: 0 }, 0, off);
    state = nextTopicLag(state, { end: 1e9, committed: 0 }, 1000, off);
    expect(state.limitPerSec).toBeUndefined();
  });
});
