import { setTimeout as sleep } from 'node:timers/promises';
import { classifyError } from '../model/failures.js';

/**
 * The one retry policy every retry loop of rxingest uses: the Elasticsearch sink's
 * per-item retries, the Kafka commit, the Redis probe, enrich, start-up waits. It
 * decides three things in one place:
 *
 * - **backoff**: capped exponential, `min(maxMs, baseMs × 2^attempt)`;
 * - **jitter**: full jitter, a uniform draw in `[0, cap]`, so that the partitions of
 *   many workers that failed together (an Elasticsearch node going away fails every
 *   partition at once) do not come back as one synchronised wave;
 * - **classification**: only `transient` failures (see `model/failures.ts`) are retried;
 * - **abort**: every wait ends at once when the caller's signal aborts.
 *
 * ```text
 * baseMs = 100, maxMs = 1000, random = () => 1
 * attempt:  0    1    2    3    4     5     ...
 * delay:    100  200  400  800  1000  1000  ...
 * ```
 */
export interface RetryPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
  /** The delay before retry number `attempt + 1` (`attempt` = retries already made, from 0). */
  delay(attempt: number): number;
  /** Sleeps `delay(attempt)`; rejects with the signal's reason as soon as it aborts. */
  wait(attempt: number, signal?: AbortSignal): Promise<void>;
  /** Whether an error is worth another try. */
  retryable(err: unknown): boolean;
}

export interface RetryPolicyOptions {
  readonly baseMs: number;
  readonly maxMs: number;
  /** Uniform in [0, 1]; Math.random in production, a constant in tests. */
  readonly random?: () => number;
  /** Default: `classifyError(err) === 'transient'`. */
  readonly retryable?: (err: unknown) => boolean;
}

export function createRetryPolicy(options: RetryPolicyOptions): RetryPolicy {
  const { baseMs, maxMs, random = Math.random } = options;
  if (!Number.isFinite(baseMs) || baseMs <= 0) {
    throw new RangeError(`baseMs must be a finite number > 0, got ${baseMs}`);
  }
  if (!Number.isFinite(maxMs) || maxMs <= 0) {
    throw new RangeError(`maxMs must be a finite number > 0, got ${maxMs}`);
  }
  const retryable = options.retryable ?? ((err: unknown) => classifyError(err) === 'transient');
  const delay = (attempt: number): number => {
    if (!Number.isInteger(attempt) || attempt < 0) {
      throw new RangeError(`attempt must be an integer >= 0, got ${attempt}`);
    }
    const r = random();
    if (!(r >= 0 && r <= 1)) throw new RangeError(`random() must return a number in [0, 1], got ${r}`);
    // 2 ** attempt overflows to Infinity for large attempts; min() then picks the cap.
    return r * Math.min(maxMs, baseMs * 2 ** attempt);
  };
  return {
    baseMs,
    maxMs,
    delay,
    retryable,
    wait: async (attempt, signal) => {
      signal?.throwIfAborted();
      try {
        await sleep(delay(attempt), undefined, signal ? { signal } : undefined);
      } catch (err) {
        // timers/promises rejects with its own AbortError: pass the caller's reason on instead.
        if (signal?.aborted) throw signal.reason;
        throw err;
      }
    },
  };
}

export interface RetryingOptions {
  readonly signal?: AbortSignal;
  /** Overrides the policy's classification for this call site. */
  readonly retryable?: (err: unknown) => boolean;
  /** Called before each wait; `attempt` is 1 for the first retry. */
  readonly onRetry?: (err: unknown, attempt: number) => void;
  /** Gives up after this many retries (default: never, while the error stays retryable). */
  readonly maxRetries?: number;
}

/**
 * Runs `work` until it succeeds, a non-retryable error is thrown (it passes through),
 * the retries run out, or the signal aborts (rejects with the signal's reason).
 */
export async function retrying<T>(
  policy: RetryPolicy,
  work: (attempt: number) => Promise<T>,
  options: RetryingOptions = {},
): Promise<T> {
  const retryable = options.retryable ?? policy.retryable;
  const maxRetries = options.maxRetries ?? Number.POSITIVE_INFINITY;
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await work(attempt);
    } catch (err) {
      if (options.signal?.aborted || attempt >= maxRetries || !retryable(err)) throw err;
      options.onRetry?.(err, attempt + 1);
      await policy.wait(attempt, options.signal);
    }
  }
}
