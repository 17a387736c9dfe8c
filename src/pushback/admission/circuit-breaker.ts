import type { CircuitBreakerSettings } from '../../config/control-settings.js';
import { abortReason, type Clock, systemClock, type TimerHandle } from '../clock.js';
import { type AnswersAtAll, SilenceWatch } from './silence-watch.js';
import { type Waiter, waitInLine } from './waiting-line.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

/** `rxingest_breaker_state`: 0 closed, 1 half-open, 2 open (contract, "Operating it"). */
export const BREAKER_STATE_VALUE: Readonly<Record<BreakerState, number>> = {
  closed: 0,
  'half-open': 1,
  open: 2,
};

export const DEFAULT_CIRCUIT_BREAKER: CircuitBreakerSettings = {
  windowMs: 30_000,
  minRequests: 5,
  failureRate: 0.5,
  slowCallMs: 10_000,
  openMs: 5_000,
  openMaxMs: 60_000,
  probes: 3,
  silenceMs: 1_000,
  livenessTimeoutMs: 2_500,
};

export interface BreakerChange {
  readonly from: BreakerState;
  readonly to: BreakerState;
  /** One human sentence: why (for the one log line per change). */
  readonly reason: string;
  /** When it goes half-open next (ms on the clock), while open for failures. */
  readonly retryAt?: number;
  /** How long it stays open this time (ms), while open for failures. */
  readonly openForMs?: number;
  /** Open because the destination answers nothing: half-open as soon as it answers again. */
  readonly untilAnswering?: true;
}

/** One admitted request. Call exactly one of these once; later calls are ignored. */
export interface BreakerTicket {
  /** The destination answered (whatever the answer's items said). */
  success(): void;
  /** Connection error, timeout, 5xx, or a destination fault (contract): the destination is not working. */
  failure(): void;
  /** The request was never sent (aborted before it went out): counts neither way. */
  cancel(): void;
}

export interface CircuitBreakerHooks {
  readonly clock?: Clock;
  /** Called once per state change, after the change. */
  readonly onStateChange?: (change: BreakerChange) => void;
  /**
   * The destination's liveness check: with it (and `silenceMs` > 0) a destination that
   * answers nothing opens the breaker within `silenceMs + livenessTimeoutMs`, and the
   * breaker probes again as soon as it answers (see SilenceWatch).
   */
  readonly answersAtAll?: AnswersAtAll;
}

/** Thrown to waiting callers by dispose(). */
export class BreakerDisposedError extends Error {
  override name = 'BreakerDisposedError';
}

const BUCKETS = 10;

/**
 * A circuit breaker around one destination: closed → open when the failure rate over a
 * sliding window (with a minimum volume) passes a threshold, or when `minRequests`
 * requests in a row have failed (a destination that froze answers nothing, so the
 * successes from before it froze would keep the window's rate low for the whole window); open → half-open after
 * `openMs` (doubling, up to `openMaxMs`, while probes keep failing); half-open lets
 * `probes` requests through and closes when they all succeed, opens again on a failure.
 *
 * A destination that answers nothing at all (a frozen process) is told from a slow one by
 * the silence watch: requests waiting, no answer for `silenceMs`, and no answer to a cheap
 * liveness check either open it at once, whatever the volume; it then goes half-open as
 * soon as the destination answers again rather than after a back-off it did not earn.
 *
 * Requests that arrive while it is open, or beyond the probes while half-open, wait in
 * `admit()` (FIFO, abortable) instead of failing: the caller's records stay in flight and
 * no retry loop spins. Results of requests admitted before a state change are ignored.
 * Timers: one while open, one per admitted request when `slowCallMs` is set; dispose()
 * clears them all.
 */
export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private generation = 0;
  private readonly clock: Clock;
  private readonly onStateChange: ((c: BreakerChange) => void) | undefined;
  private readonly bucketMs: number;
  private buckets: { start: number; requests: number; failures: number }[] = [];
  private openFor: number;
  private openTimer: TimerHandle | undefined;
  private retryAt: number | undefined;
  /** Failures in a row since the last success (closed state), none a window after the one before. */
  private failuresInARow = 0;
  private lastFailureAt = 0;
  private probesAdmitted = 0;
  private probeSuccesses = 0;
  private readonly waiters: Waiter<BreakerTicket>[] = [];
  private readonly slowTimers = new Set<TimerHandle>();
  private readonly silence: SilenceWatch | undefined;
  private disposed = false;

  constructor(
    private readonly settings: CircuitBreakerSettings = DEFAULT_CIRCUIT_BREAKER,
    hooks: CircuitBreakerHooks = {},
  ) {
    checkSettings(settings);
    this.clock = hooks.clock ?? systemClock;
    this.onStateChange = hooks.onStateChange;
    this.bucketMs = settings.windowMs / BUCKETS;
    this.openFor = settings.openMs;
    if (hooks.answersAtAll && settings.silenceMs > 0)
      this.silence = new SilenceWatch(settings, {
        clock: this.clock,
        answersAtAll: hooks.answersAtAll,
        onSilent: (silentForMs) => {
          if (this.current === 'open') return;
          this.open(
            `no answer for ${(silentForMs / 1000).toFixed(1)} s and none to a liveness check ` +
              `within ${(settings.livenessTimeoutMs / 1000).toFixed(1)} s`,
            'until-answering',
          );
        },
      });
  }

  get state(): BreakerState {
    return this.current;
  }

  /** Requests and failures in the window (closed state). */
  get window(): { requests: number; failures: number } {
    this.dropOldBuckets();
    let requests = 0;
    let failures = 0;
    for (const b of this.buckets) {
      requests += b.requests;
      failures += b.failures;
    }
    return { requests, failures };
  }

  /** A ticket at once if the breaker lets a request through now, else undefined. */
  tryAdmit(): BreakerTicket | undefined {
    if (this.disposed) throw new BreakerDisposedError('circuit breaker disposed');
    if (this.waiters.length > 0) return undefined;
    return this.admitNow();
  }

  /** Waits until the breaker lets a request through. Rejects if the signal aborts or on dispose(). */
  admit(signal?: AbortSignal): Promise<BreakerTicket> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    try {
      const now = this.tryAdmit();
      if (now) return Promise.resolve(now);
    } catch (err) {
      return Promise.reject(err);
    }
    return waitInLine(this.waiters, signal);
  }

  /** Clears every timer and rejects every waiting admit(). The breaker is unusable afterwards. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.openTimer !== undefined) this.clock.clearTimeout(this.openTimer);
    this.openTimer = undefined;
    this.silence?.stop();
    for (const t of this.slowTimers) this.clock.clearTimeout(t);
    this.slowTimers.clear();
    for (const w of this.waiters.splice(0)) {
      w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(new BreakerDisposedError('circuit breaker disposed'));
    }
  }

  private admitNow(): BreakerTicket | undefined {
    if (this.current === 'open') return undefined;
    if (this.current === 'half-open') {
      if (this.probesAdmitted >= this.settings.probes) return undefined;
      this.probesAdmitted++;
    }
    return this.ticket(this.generation, this.current === 'half-open');
  }

  private ticket(generation: number, probe: boolean): BreakerTicket {
    let settled = false;
    let slow: TimerHandle | undefined;
    const ended = this.silence?.sent();
    const settle = (outcome: 'success' | 'failure' | 'cancel', answered = true) => {
      if (answered) ended?.(outcome !== 'cancel');
      if (settled) return;
      settled = true;
      if (slow !== undefined) {
        this.clock.clearTimeout(slow);
        this.slowTimers.delete(slow);
      }
      if (this.disposed || generation !== this.generation) return;
      if (outcome === 'cancel') {
        if (probe) {
          this.probesAdmitted--;
          this.serveWaiters();
        }
        return;
      }
      if (probe) this.onProbe(outcome === 'success');
      else this.onResult(outcome === 'success');
    };
    if (this.settings.slowCallMs > 0) {
      slow = this.clock.setTimeout(() => {
        this.slowTimers.delete(slow!);
        slow = undefined;
        settle('failure', false);
      }, this.settings.slowCallMs);
      this.slowTimers.add(slow);
    }
    return {
      success: () => settle('success'),
      failure: () => settle('failure'),
      cancel: () => settle('cancel'),
    };
  }

  private onResult(ok: boolean): void {
    const bucket = this.bucketFor(this.clock.now());
    bucket.requests++;
    if (ok) {
      this.failuresInARow = 0;
      return;
    }
    bucket.failures++;
    const now = this.clock.now();
    if (now - this.lastFailureAt > this.settings.windowMs) this.failuresInARow = 0;
    this.lastFailureAt = now;
    this.failuresInARow++;
    if (this.failuresInARow >= this.settings.minRequests) {
      this.open(`${this.failuresInARow} requests in a row failed`);
      return;
    }
    const { requests, failures } = this.window;
    const rate = failures / requests;
    if (requests >= this.settings.minRequests && rate >= this.settings.failureRate) {
      const seconds = Math.round(this.settings.windowMs / 1000);
      this.open(
        `${failures} of ${requests} requests failed in the last ${seconds} s ` +
          `(${Math.round(rate * 100)}% >= ${Math.round(this.settings.failureRate * 100)}%)`,
      );
    }
  }

  private onProbe(ok: boolean): void {
    if (!ok) {
      this.openFor = Math.min(this.settings.openMaxMs, this.openFor * 2);
      this.open('a probe request failed');
      return;
    }
    this.probeSuccesses++;
    if (this.probeSuccesses >= this.settings.probes) {
      this.openFor = this.settings.openMs;
      this.buckets = [];
      this.transition('closed', `${this.settings.probes} probe request(s) succeeded`);
    }
  }

  private open(reason: string, until: 'timer' | 'until-answering' = 'timer'): void {
    if (until === 'until-answering') {
      this.retryAt = undefined;
      this.transition('open', reason);
      this.silence?.untilAnswering(() => this.halfOpen('the destination answers again; probing'));
      return;
    }
    this.retryAt = this.clock.now() + this.openFor;
    this.openTimer = this.clock.setTimeout(() => {
      this.openTimer = undefined;
      this.halfOpen(`open for ${Math.round(this.openFor / 1000)} s; probing`);
    }, this.openFor);
    this.transition('open', reason);
  }

  private halfOpen(reason: string): void {
    this.retryAt = undefined;
    this.probesAdmitted = 0;
    this.probeSuccesses = 0;
    this.transition('half-open', reason);
  }

  private transition(to: BreakerState, reason: string): void {
    const from = this.current;
    this.failuresInARow = 0;
    this.current = to;
    this.generation++;
    this.silence?.forget();
    const change: BreakerChange =
      to !== 'open'
        ? { from, to, reason }
        : this.retryAt !== undefined
          ? { from, to, reason, retryAt: this.retryAt, openForMs: this.openFor }
          : { from, to, reason, untilAnswering: true };
    this.onStateChange?.(change);
    this.serveWaiters();
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0) {
      const ticket = this.admitNow();
      if (ticket === undefined) return;
      const w = this.waiters.shift()!;
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve(ticket);
    }
  }

  private bucketFor(now: number): { start: number; requests: number; failures: number } {
    this.dropOldBuckets(now);
    const start = Math.floor(now / this.bucketMs) * this.bucketMs;
    let last = this.buckets.at(-1);
    if (last === undefined || last.start !== start) {
      last = { start, requests: 0, failures: 0 };
      this.buckets.push(last);
    }
    return last;
  }

  private dropOldBuckets(now = this.clock.now()): void {
    const oldest = now - this.settings.windowMs;
    while (this.buckets.length > 0 && this.buckets[0]!.start + this.bucketMs <= oldest) this.buckets.shift();
  }
}

function checkSettings(s: CircuitBreakerSettings): void {
  const positive = (n: number) => Number.isFinite(n) && n > 0;
  if (!positive(s.windowMs)) throw new RangeError(`windowMs must be > 0, got ${s.windowMs}`);
  if (!Number.isInteger(s.minRequests) || s.minRequests < 1)
    throw new RangeError(`minRequests must be a whole number >= 1, got ${s.minRequests}`);
  if (!(s.failureRate > 0 && s.failureRate <= 1))
    throw new RangeError(`failureRate must be in (0, 1], got ${s.failureRate}`);
  if (!(Number.isFinite(s.slowCallMs) && s.slowCallMs >= 0))
    throw new RangeError(`slowCallMs must be >= 0, got ${s.slowCallMs}`);
  if (!positive(s.openMs) || !positive(s.openMaxMs) || s.openMaxMs < s.openMs)
    throw new RangeError(
      `openMs and openMaxMs must be > 0 with openMs <= openMaxMs, got ${s.openMs}, ${s.openMaxMs}`,
    );
  if (!(Number.isFinite(s.silenceMs) && s.silenceMs >= 0))
    throw new RangeError(`silenceMs must be >= 0, got ${s.silenceMs}`);
  if (!positive(s.livenessTimeoutMs))
    throw new RangeError(`livenessTimeoutMs must be > 0, got ${s.livenessTimeoutMs}`);
  if (!Number.isInteger(s.probes) || s.probes < 1)
    throw new RangeError(`probes must be a whole number >= 1, got ${s.probes}`);
}
