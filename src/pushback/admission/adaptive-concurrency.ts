import type { AdaptiveConcurrencySettings } from '../../config/control-settings.js';
import { abortReason, type Clock, systemClock } from '../clock.js';
import { type Waiter, waitInLine } from './waiting-line.js';

export const DEFAULT_ADAPTIVE_CONCURRENCY: AdaptiveConcurrencySettings = {
  initial: 4,
  min: 1,
  max: 32,
  decreaseRatio: 0.9,
  rttDeviationScale: 2.5,
  ewmaAlpha: 0.4,
};

/** What one request's answer said about the destination's load. */
export interface LimiterOutcome {
  /** How long the request took; measured from the grant when omitted; NaN: not a measure of load. */
  readonly rttMs?: number;
  /**
   * The destination pushed back: HTTP 429 or 5xx, a timeout, a connection error, or
   * item-level 429s/rejections inside an HTTP 200 bulk answer. Such an answer's RTT is not
   * used for the moving mean (a fast refusal says nothing about normal latency).
   */
  readonly backpressure: boolean;
}

/** One request's right to be in flight. Release or cancel it exactly once (later calls are ignored). */
export interface ConcurrencyPermit {
  release(outcome: LimiterOutcome): void;
  /** Gives the permit back without a measurement (the request was never answered). */
  cancel(): void;
}

export interface AdaptiveConcurrencyHooks {
  readonly clock?: Pick<Clock, 'now'>;
  /** Called with the limit at construction and on every change (`rxingest_es_concurrency_limit`). */
  readonly onLimit?: (limit: number) => void;
}

/**
 * Cycles measured before a rise of the RTT alone may lower the limit: the deviation of one
 * or two samples is ~0, so any RTT above the first one would count as a rise.
 */
const RTT_WARMUP_CYCLES = 5;

/** Exponentially weighted mean and variance (West's incremental form, as Vector's EwmaVar). */
class EwmaVar {
  mean = 0;
  variance = 0;
  samples = 0;
  get started(): boolean {
    return this.samples > 0;
  }
  constructor(private readonly alpha: number) {}
  update(x: number): void {
    this.samples++;
    if (this.samples === 1) {
      this.mean = x;
      this.variance = 0;
      return;
    }
    const diff = x - this.mean;
    const inc = this.alpha * diff;
    this.mean += inc;
    this.variance = (1 - this.alpha) * (this.variance + diff * inc);
  }
}

/**
 * A limit on requests in flight across the whole worker, adapted AIMD-style to what the
 * destination can take (Vector's adaptive request concurrency, with item-level pushback).
 *
 * Time is cut into cycles of one moving-mean RTT. At the end of a cycle:
 *
 * - **+1** if the limit was actually reached during the cycle (someone had to wait, or
 *   in-flight hit the limit), nothing pushed back, and the cycle's mean RTT is no higher
 *   than the moving mean: there is evidence the destination can take more.
 * - **× decreaseRatio** (floored, at least −1) if anything pushed back, or the cycle's mean
 *   RTT reached `mean + rttDeviationScale × σ` (and is above the mean, and five cycles have
 *   been measured, so that σ means something): queues are building up.
 * - otherwise unchanged. Then the cycle's mean RTT enters the moving mean and deviation.
 *
 * Answers to requests sent before the last decrease count neither way: the decrease
 * already answered the load they saw.
 *
 * Retries must acquire a permit per attempt like first tries, so retries never add load
 * outside the limit. A lowered limit takes effect as permits come back: no request is
 * cancelled. Waiters are served first come, first served. Purely event-driven: no timers,
 * nothing to dispose.
 */
export class AdaptiveConcurrencyLimiter {
  private current: number;
  private active = 0;
  private readonly waiters: Waiter<ConcurrencyPermit>[] = [];
  private readonly past: EwmaVar;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly onLimit: ((limit: number) => void) | undefined;
  private nextUpdateAt: number;
  /** Counts decreases; a permit remembers the one it was granted under. */
  private generation = 0;
  private cycle = { rttSum: 0, rttCount: 0, backpressure: false, reachedLimit: false };

  constructor(
    private readonly settings: AdaptiveConcurrencySettings = DEFAULT_ADAPTIVE_CONCURRENCY,
    hooks: AdaptiveConcurrencyHooks = {},
  ) {
    checkSettings(settings);
    this.current = settings.initial;
    this.past = new EwmaVar(settings.ewmaAlpha);
    this.clock = hooks.clock ?? systemClock;
    this.onLimit = hooks.onLimit;
    this.nextUpdateAt = this.clock.now();
    this.onLimit?.(this.current);
  }

  /** The current limit. */
  get limit(): number {
    return this.current;
  }

  /** Requests holding a permit. May exceed the limit for a while right after a decrease. */
  get inFlight(): number {
    return this.active;
  }

  /** Requests waiting for a permit. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** The RTT moving mean and deviation (ms), once a cycle has been measured. */
  get rtt(): { mean: number; deviation: number } | undefined {
    return this.past.started ? { mean: this.past.mean, deviation: Math.sqrt(this.past.variance) } : undefined;
  }

  /**
   * Resolves with a permit as soon as fewer than `limit` requests are in flight (and
   * everyone who asked earlier was served). Rejects with the signal's reason if it aborts
   * first; an aborted wait takes nothing.
   */
  acquire(signal?: AbortSignal): Promise<ConcurrencyPermit> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.waiters.length === 0 && this.active < this.current) return Promise.resolve(this.grant());
    // Demand exceeds the limit: evidence that a higher limit would be used.
    this.cycle.reachedLimit = true;
    return waitInLine(this.waiters, signal);
  }

  private grant(): ConcurrencyPermit {
    this.active++;
    if (this.active >= this.current) this.cycle.reachedLimit = true;
    const grantedAt = this.clock.now();
    const generation = this.generation;
    let released = false;
    return {
      release: (outcome) => {
        if (released) return;
        released = true;
        this.onRelease(outcome.rttMs ?? this.clock.now() - grantedAt, outcome.backpressure, generation);
      },
      cancel: () => {
        if (released) return;
        released = true;
        this.active--;
        this.serveWaiters();
      },
    };
  }

  private onRelease(rttMs: number, backpressure: boolean, generation: number): void {
    this.active--;
    const c = this.cycle;
    // A request sent before the last decrease reports the load of the old limit, which the
    // decrease has already answered: counting its refusal or its RTT again would cut the
    // limit once more for the same episode (one reduction per episode, as TCP's fast
    // recovery). Measured against a node with a write queue of two: without this, the
    // answers still in flight after one cut brought the limit down by one a cycle to 2.
    if (generation !== this.generation) {
      this.serveWaiters();
      return;
    }
    if (backpressure) c.backpressure = true;
    else if (Number.isFinite(rttMs) && rttMs >= 0) {
      c.rttSum += rttMs;
      c.rttCount++;
    }
    const now = this.clock.now();
    if (now >= this.nextUpdateAt && (c.rttCount > 0 || c.backpressure)) this.endCycle(now, rttMs);
    this.serveWaiters();
  }

  private endCycle(now: number, lastRttMs: number): void {
    const c = this.cycle;
    const cycleRtt = c.rttCount > 0 ? c.rttSum / c.rttCount : undefined;
    const { min, max, decreaseRatio, rttDeviationScale } = this.settings;
    let next = this.current;
    if (this.past.started) {
      const { mean } = this.past;
      const threshold = mean + rttDeviationScale * Math.sqrt(this.past.variance);
      const rttHeld = cycleRtt !== undefined && cycleRtt <= mean;
      const rttRose =
        this.past.samples >= RTT_WARMUP_CYCLES &&
        cycleRtt !== undefined &&
        cycleRtt > mean &&
        cycleRtt >= threshold;
      if (c.reachedLimit && !c.backpressure && rttHeld) next = this.current + 1;
      else if (c.backpressure || rttRose) next = decreased(this.current, decreaseRatio);
    } else if (c.backpressure) {
      // No normal RTT known yet (the first answers pushed back): still back off.
      next = decreased(this.current, decreaseRatio);
    }
    next = Math.min(max, Math.max(min, next));
    if (cycleRtt !== undefined) this.past.update(cycleRtt);
    const cycleLength = this.past.started ? this.past.mean : Number.isFinite(lastRttMs) ? lastRttMs : 0;
    this.nextUpdateAt = now + Math.max(0, cycleLength);
    this.cycle = { rttSum: 0, rttCount: 0, backpressure: false, reachedLimit: false };
    if (next < this.current) this.generation++;
    if (next !== this.current) {
      this.current = next;
      this.onLimit?.(next);
    }
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0 && this.active < this.current) {
      const w = this.waiters.shift()!;
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve(this.grant());
    }
  }
}

/** Floored, so that every decrease lowers the limit by at least one. */
function decreased(limit: number, ratio: number): number {
  return Math.floor(limit * ratio);
}

function checkSettings(s: AdaptiveConcurrencySettings): void {
  const wholeAtLeast1 = (n: number) => Number.isInteger(n) && n >= 1;
  if (!wholeAtLeast1(s.min) || !wholeAtLeast1(s.max) || s.min > s.max) {
    throw new RangeError(
      `concurrency bounds must be whole numbers with 1 <= min <= max, got ${s.min}…${s.max}`,
    );
  }
  if (!Number.isInteger(s.initial) || s.initial < s.min || s.initial > s.max) {
    throw new RangeError(`initial concurrency ${s.initial} must be a whole number within ${s.min}…${s.max}`);
  }
  if (!(s.decreaseRatio > 0 && s.decreaseRatio < 1)) {
    throw new RangeError(`decreaseRatio must be in (0, 1), got ${s.decreaseRatio}`);
  }
  if (!(s.rttDeviationScale >= 0) || !Number.isFinite(s.rttDeviationScale)) {
    throw new RangeError(`rttDeviationScale must be a finite number >= 0, got ${s.rttDeviationScale}`);
  }
  if (!(s.ewmaAlpha > 0 && s.ewmaAlpha <= 1)) {
    throw new RangeError(`ewmaAlpha must be in (0, 1], got ${s.ewmaAlpha}`);
  }
}
