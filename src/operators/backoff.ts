import {
  asyncScheduler,
  type MonoTypeOperatorFunction,
  retry,
  type SchedulerLike,
  throwError,
  timer,
} from 'rxjs';

export interface BackoffSchedule {
  /** The cap of the first retry's delay; each further retry doubles it. */
  baseMs: number;
  /** No cap grows beyond this. */
  maxMs: number;
  /** Uniform in [0, 1]; Math.random in production, a constant in tests. */
  random: () => number;
}

/**
 * The delay before retry number `attempt + 1` (`attempt` counts the retries already made, so
 * the first retry is `attempt = 0`): capped exponential backoff with full jitter,
 *
 *     random() * min(maxMs, baseMs * 2 ** attempt)
 *
 * Full jitter spreads the retries of many workers that failed together (an Elasticsearch
 * node going away fails every partition at once) over the whole interval, so they do not
 * return as a synchronised wave.
 *
 * ```text
 * baseMs = 100, maxMs = 1000, random = () => 1
 * attempt:  0    1    2    3    4     5     ...
 * delay:    100  200  400  800  1000  1000  ...
 * ```
 *
 * @throws RangeError on a negative or fractional attempt, a non-positive or infinite
 * baseMs/maxMs, or a random() outside [0, 1].
 */
export function backoffDelay(attempt: number, opts: BackoffSchedule): number {
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new RangeError(`attempt must be an integer >= 0, got ${attempt}`);
  }
  assertSchedule(opts.baseMs, opts.maxMs);
  const r = opts.random();
  if (!(r >= 0 && r <= 1)) {
    throw new RangeError(`random() must return a number in [0, 1], got ${r}`);
  }
  // 2 ** attempt overflows to Infinity for large attempts; min() then picks the cap.
  return r * Math.min(opts.maxMs, opts.baseMs * 2 ** attempt);
}

export interface RetryWithBackoffOptions {
  baseMs: number;
  maxMs: number;
  /** How many times to resubscribe (the first subscription is not counted). Default Infinity. */
  maxAttempts?: number;
  /** Errors for which this returns false pass through at once, without delay or onRetry. */
  isRetryable: (err: unknown) => boolean;
  /** Default Math.random. */
  random?: () => number;
  scheduler?: SchedulerLike;
  /** Called as each retry is scheduled; `attempt` is 1 for the first retry. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/**
 * On a retryable error, resubscribes to the source after {@link backoffDelay}; after
 * `maxAttempts` retries, or on an error that is not retryable, the error passes through.
 *
 * ```text
 * baseMs = 100, maxMs = 300, maxAttempts = 3, random = () => 1, every error retryable
 *
 * source: --#            cold: errors 2 ms after each subscription
 *
 * subscriptions to source   error at   then
 * ^-!                       2          retry 1 after 100 ms
 * 102ms ^-!                 104        retry 2 after 200 ms
 * 304ms ^-!                 306        retry 3 after 300 ms (400, capped at maxMs)
 * 606ms ^-!                 608        no retry left: the error passes on
 *
 * result: 608ms #
 * ```
 *
 * The retry count is not reset by values the source emits: this is meant for request-like
 * sources (one bulk call, one lookup), where a value means success and completion follows.
 * Values emitted before an error are passed on, and emitted again if the retried source
 * emits them again.
 *
 * @throws RangeError if baseMs or maxMs is not a finite number > 0, or maxAttempts is not an
 * integer >= 0 (or Infinity).
 */
export function retryWithBackoff<T>(opts: RetryWithBackoffOptions): MonoTypeOperatorFunction<T> {
  const {
    baseMs,
    maxMs,
    maxAttempts = Number.POSITIVE_INFINITY,
    isRetryable,
    random = Math.random,
    scheduler = asyncScheduler,
    onRetry,
  } = opts;
  assertSchedule(baseMs, maxMs);
  if (!(Number.isInteger(maxAttempts) || maxAttempts === Number.POSITIVE_INFINITY) || maxAttempts < 0) {
    throw new RangeError(`maxAttempts must be an integer >= 0 or Infinity, got ${maxAttempts}`);
  }

  return retry<T>({
    count: maxAttempts,
    delay: (err: unknown, attempt: number) => {
      if (!isRetryable(err)) return throwError(() => err);
      const delayMs = backoffDelay(attempt - 1, { baseMs, maxMs, random });
      onRetry?.(err, attempt, delayMs);
      return timer(delayMs, scheduler);
    },
  });
}

function assertSchedule(baseMs: number, maxMs: number): void {
  if (!Number.isFinite(baseMs) || baseMs <= 0) {
    throw new RangeError(`baseMs must be a finite number > 0, got ${baseMs}`);
  }
  if (!Number.isFinite(maxMs) || maxMs <= 0) {
    throw new RangeError(`maxMs must be a finite number > 0, got ${maxMs}`);
  }
}
