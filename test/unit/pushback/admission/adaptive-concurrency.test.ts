import { describe, expect, it } from 'vitest';
import type { AdaptiveConcurrencySettings } from '../../../../src/config/control-settings.js';
import {
  AdaptiveConcurrencyLimiter,
  type ConcurrencyPermit,
} from '../../../../src/pushback/admission/adaptive-concurrency.js';
import { prng } from '../../../support/data/random.js';
import { ManualClock, settle } from '../../../support/fakes/manual-clock.js';
import { SimulatedDestination } from '../../../support/fakes/simulated-destination.js';

const settings = (s: Partial<AdaptiveConcurrencySettings> = {}): AdaptiveConcurrencySettings => ({
  initial: 4,
  min: 1,
  max: 64,
  decreaseRatio: 0.9,
  rttDeviationScale: 2.5,
  ewmaAlpha: 0.4,
  ...s,
});

/**
 * 100 senders that always have a request ready run against a destination of the given
 * capacity for `seconds` of virtual time. Returns the limit over time and what was served.
 */
async function simulate(opts: {
  capacity: number;
  queue: number;
  seconds: number;
  /** false: report item-level refusals as success, as a limiter that sees only HTTP statuses does. */
  seeItemRejections?: boolean;
  refuseMs?: number;
}) {
  const clock = new ManualClock();
  const trace: { at: number; limit: number }[] = [];
  const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 1 }), {
    clock,
    onLimit: (limit) => trace.push({ at: clock.now(), limit }),
  });
  const serviceMs = 50;
  const dest = new SimulatedDestination(clock, {
    capacity: opts.capacity,
    queue: opts.queue,
    serviceMs,
    noise: 0.2,
    random: prng(7),
    refuseMs: opts.refuseMs ?? 1,
  });
  let running = true;
  const senders = Array.from({ length: 100 }, async () => {
    while (running) {
      const permit = await limiter.acquire();
      const answer = await dest.handle();
      permit.release({ backpressure: answer.itemsRejected && opts.seeItemRejections !== false });
    }
  });
  await clock.advance(opts.seconds * 1000);
  running = false;
  await clock.advance(1000);
  await Promise.all(senders);
  const capacityPerSec = (opts.capacity * 1000) / serviceMs;
  /** The limit's lowest and highest values after `fromMs`. */
  const band = (fromMs: number) => {
    const before = trace.filter((t) => t.at <= fromMs).at(-1)!.limit;
    const after = trace.filter((t) => t.at > fromMs).map((t) => t.limit);
    return { min: Math.min(before, ...after), max: Math.max(before, ...after) };
  };
  return { trace, band, dest, limiter, capacityPerSec, servedPerSec: dest.served / opts.seconds };
}

describe('AdaptiveConcurrencyLimiter against a simulated destination', () => {
  it('converges on a destination with a capacity and a bounded queue, and stays in a narrow band', async () => {
    const run = await simulate({ capacity: 16, queue: 8, seconds: 120 });
    // From 1, it reaches the capacity within seconds (one +1 per RTT cycle).
    const reached = run.trace.find((t) => t.limit >= 16);
    expect(reached).toBeDefined();
    expect(reached!.at).toBeLessThan(5_000);
    // After that it never drops below the capacity (no collapse, no wide sawtooth) and never
    // climbs past what the destination queues: the band is capacity…capacity+queue+1.
    const band = run.band(10_000);
    expect(band.min).toBeGreaterThanOrEqual(16);
    expect(band.max).toBeLessThanOrEqual(16 + 8 + 1);
    // So the destination is kept busy: throughput is its capacity.
    expect(run.servedPerSec).toBeGreaterThan(0.97 * run.capacityPerSec);
  });

  it('converges when overload shows only as item-level rejections inside HTTP 200 answers', async () => {
    const run = await simulate({ capacity: 16, queue: 0, seconds: 120 });
    const band = run.band(10_000);
    // Item-level refusals are backpressure: the limit hovers at the capacity instead of running away.
    expect(band.max).toBeLessThanOrEqual(17);
    expect(band.min).toBeGreaterThanOrEqual(10);
    expect(run.servedPerSec).toBeGreaterThan(0.9 * run.capacityPerSec);
  });

  it('runs far past the capacity when item-level rejections are not counted (an HTTP-status-only limiter)', async () => {
    const blind = await simulate({
      capacity: 16,
      queue: 0,
      seconds: 30,
      refuseMs: 10,
      seeItemRejections: false,
    });
    const seeing = await simulate({ capacity: 16, queue: 0, seconds: 30, refuseMs: 10 });
    expect(blind.band(10_000).max).toBeGreaterThan(2 * 16);
    expect(seeing.limiter.limit).toBeLessThanOrEqual(17);
    // The blind limiter's destination refuses most of what it is sent.
    expect(blind.dest.refused).toBeGreaterThan(10 * seeing.dest.refused);
  }, 30_000);

  it('follows a destination whose capacity drops, then recovers', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 1 }), { clock });
    const big = new SimulatedDestination(clock, {
      capacity: 24,
      queue: 0,
      serviceMs: 40,
      noise: 0.1,
      random: prng(1),
    });
    const small = new SimulatedDestination(clock, {
      capacity: 6,
      queue: 0,
      serviceMs: 40,
      noise: 0.1,
      random: prng(2),
    });
    let dest = big;
    let running = true;
    const senders = Array.from({ length: 60 }, async () => {
      while (running) {
        const permit = await limiter.acquire();
        const answer = await dest.handle();
        permit.release({ backpressure: answer.itemsRejected });
      }
    });
    await clock.advance(20_000);
    expect(limiter.limit).toBeGreaterThanOrEqual(20);
    dest = small;
    await clock.advance(5_000);
    expect(limiter.limit).toBeLessThanOrEqual(7);
    dest = big;
    await clock.advance(20_000);
    expect(limiter.limit).toBeGreaterThanOrEqual(20);
    running = false;
    await clock.advance(1_000);
    await Promise.all(senders);
  });
});

describe('AdaptiveConcurrencyLimiter rules', () => {
  /** Sends `n` requests at once, all answering after `rttMs` with `backpressure`. */
  async function wave(
    limiter: AdaptiveConcurrencyLimiter,
    clock: ManualClock,
    n: number,
    rttMs: number,
    backpressure = false,
  ) {
    const permits = await Promise.all(Array.from({ length: n }, () => limiter.acquire()));
    await clock.advance(rttMs);
    for (const p of permits) p.release({ backpressure });
  }

  it('reports the initial limit and every change through onLimit', async () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 5 }), {
      clock,
      onLimit: (n) => seen.push(n),
    });
    expect(seen).toEqual([5]);
    await wave(limiter, clock, 5, 10); // first cycle: learns the RTT
    await wave(limiter, clock, 5, 10); // reached, RTT held: +1
    expect(seen).toEqual([5, 6]);
  });

  it('adds one only when the limit was actually reached', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 4 }), { clock });
    for (let i = 0; i < 20; i++) await wave(limiter, clock, 2, 10); // half the limit used
    expect(limiter.limit).toBe(4);
    for (let i = 0; i < 5; i++) await wave(limiter, clock, limiter.limit, 10);
    expect(limiter.limit).toBe(9);
  });

  it('multiplies by the decrease ratio on backpressure (floored, at least one less)', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 20 }), { clock });
    await wave(limiter, clock, 20, 10);
    expect(limiter.limit).toBe(20);
    await wave(limiter, clock, 20, 10, true);
    expect(limiter.limit).toBe(18);
    await wave(limiter, clock, 3, 10, true);
    expect(limiter.limit).toBe(16);
  });

  it('cuts once per episode: refusals of requests sent before a decrease do not decrease again', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 10 }), { clock });
    await wave(limiter, clock, 10, 10); // learns the RTT
    const sentBefore = await Promise.all(Array.from({ length: 10 }, () => limiter.acquire()));
    await clock.advance(10);
    for (const p of sentBefore.slice(0, 5)) p.release({ backpressure: true });
    expect(limiter.limit).toBe(9);
    // The rest of the same wave is refused too, a cycle later: the cut already answered it.
    await clock.advance(10);
    for (const p of sentBefore.slice(5)) p.release({ backpressure: true });
    expect(limiter.limit).toBe(9);
    // A refusal of a request sent under the new limit is a new episode.
    await wave(limiter, clock, 9, 10, true);
    expect(limiter.limit).toBe(8);
  });

  it('backs off even before any normal RTT is known', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 10 }), { clock });
    await wave(limiter, clock, 10, 5_000, true); // the very first answers are timeouts
    expect(limiter.limit).toBe(9);
  });

  it('decreases when the RTT rises past mean + k·σ without any error', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 10, max: 10 }), { clock });
    // Ten cycles of 100/110 ms: a normal spread, no decrease (the first five only build σ).
    for (let i = 0; i < 10; i++) await wave(limiter, clock, 10, 100 + (i % 2) * 10);
    expect(limiter.limit).toBe(10);
    expect(limiter.rtt!.mean).toBeGreaterThan(100);
    expect(limiter.rtt!.mean).toBeLessThan(110);
    await wave(limiter, clock, 10, 400);
    expect(limiter.limit).toBe(9);
  });

  it('does not decrease when a steady RTT has no deviation', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 6 }), { clock });
    for (let i = 0; i < 20; i++) await wave(limiter, clock, 3, 50); // σ = 0, RTT = mean
    expect(limiter.limit).toBe(6);
  });

  it('stays within its bounds', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 3, min: 2, max: 5 }), { clock });
    for (let i = 0; i < 20; i++) await wave(limiter, clock, limiter.limit, 10);
    expect(limiter.limit).toBe(5);
    for (let i = 0; i < 20; i++) await wave(limiter, clock, 2, 10, true);
    expect(limiter.limit).toBe(2);
  });

  it('with min = max it is a fixed limit', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 7, min: 7, max: 7 }), { clock });
    for (let i = 0; i < 10; i++) await wave(limiter, clock, 7, 10, i % 2 === 0);
    expect(limiter.limit).toBe(7);
  });

  it('never lets more than the limit in flight; waiters are served in order as permits return', async () => {
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 2 }), { clock: new ManualClock() });
    const order: number[] = [];
    const permits: ConcurrencyPermit[] = [];
    const pending = [1, 2, 3, 4].map((i) =>
      limiter.acquire().then((p) => {
        order.push(i);
        permits.push(p);
      }),
    );
    await settle();
    expect(order).toEqual([1, 2]);
    expect(limiter.inFlight).toBe(2);
    expect(limiter.waiting).toBe(2);
    permits[1]!.release({ backpressure: false, rttMs: 5 });
    await settle();
    expect(order).toEqual([1, 2, 3]);
    permits[0]!.release({ backpressure: false, rttMs: 5 });
    await Promise.all(pending);
    expect(order).toEqual([1, 2, 3, 4]);
    expect(limiter.inFlight).toBe(2);
  });

  it('a second release of the same permit is ignored', async () => {
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 1 }), { clock: new ManualClock() });
    const a = await limiter.acquire();
    const b = limiter.acquire();
    const c = limiter.acquire();
    a.release({ backpressure: false, rttMs: 1 });
    a.release({ backpressure: false, rttMs: 1 });
    await b;
    await settle();
    expect(limiter.inFlight).toBe(1);
    expect(limiter.waiting).toBe(1);
    (await b).release({ backpressure: false, rttMs: 1 });
    await c;
  });

  it('an aborted wait rejects with the reason and takes nothing', async () => {
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 1 }), { clock: new ManualClock() });
    const held = await limiter.acquire();
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal);
    const next = limiter.acquire();
    controller.abort(new Error('partition revoked'));
    await expect(waiting).rejects.toThrow('partition revoked');
    expect(limiter.waiting).toBe(1);
    held.release({ backpressure: false, rttMs: 1 });
    await next;
    expect(limiter.inFlight).toBe(1);
    await expect(limiter.acquire(controller.signal)).rejects.toThrow('partition revoked');
  });

  it('a lowered limit takes effect as permits come back', async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveConcurrencyLimiter(settings({ initial: 10 }), { clock });
    await wave(limiter, clock, 10, 10);
    const permits = await Promise.all(Array.from({ length: 10 }, () => limiter.acquire()));
    await clock.advance(10);
    permits[0]!.release({ backpressure: true });
    expect(limiter.limit).toBe(9);
    expect(limiter.inFlight).toBe(9);
    let granted = false;
    const extra = limiter.acquire().then((p) => {
      granted = true;
      return p;
    });
    await settle();
    expect(granted).toBe(false);
    permits[1]!.release({ backpressure: false });
    await extra;
    expect(limiter.inFlight).toBe(9);
  });

  it('refuses settings it cannot work with', () => {
    expect(() => new AdaptiveConcurrencyLimiter(settings({ min: 0 }))).toThrow(RangeError);
    expect(() => new AdaptiveConcurrencyLimiter(settings({ min: 5, max: 4, initial: 4 }))).toThrow(
      RangeError,
    );
    expect(() => new AdaptiveConcurrencyLimiter(settings({ initial: 100 }))).toThrow(/initial/);
    expect(() => new AdaptiveConcurrencyLimiter(settings({ decreaseRatio: 1 }))).toThrow(/decreaseRatio/);
    expect(() => new AdaptiveConcurrencyLimiter(settings({ ewmaAlpha: 0 }))).toThrow(/ewmaAlpha/);
  });
});
