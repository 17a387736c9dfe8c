import {
  asyncScheduler,
  type MonoTypeOperatorFunction,
  retry,
  type SchedulerLike,
  throwError,
  timer,
} from 'rxjs';
import type { RetryPolicy } from '../retry/retry-policy.js';

export interface RetryWithPolicyOptions {
  readonly scheduler?: SchedulerLike;
  /** Overrides the policy's classification (errors for which it returns false pass at once). */
  readonly retryable?: (err: unknown) => boolean;
  /** Gives up after this many retries; default never while the error stays retryable. */
  readonly maxRetries?: number;
  /** Called as each retry is scheduled; `attempt` is 1 for the first retry. */
  readonly onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * The retry policy as an operator: on a retryable error it resubscribes to the source
 * after `policy.delay(attempt)`; a non-retryable error, or one after the last retry,
 * passes through.
 *
 * ```text
 * policy: baseMs = 100, maxMs = 300, random = () => 1; maxRetries = 3
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
 * Meant for request-like sources (one call, one lookup), where a value means success:
 * values emitted before an error are passed on, and emitted again if the retried source
 * emits them again.
 */
export function retryWithPolicy<T>(
  policy: RetryPolicy,
  options: RetryWithPolicyOptions = {},
): MonoTypeOperatorFunction<T> {
  const { scheduler = asyncScheduler, retryable = policy.retryable, onRetry } = options;
  const maxRetries = options.maxRetries ?? Number.POSITIVE_INFINITY;
  if (!(Number.isInteger(maxRetries) || maxRetries === Number.POSITIVE_INFINITY) || maxRetries < 0) {
    throw new RangeError(`maxRetries must be an integer >= 0 or Infinity, got ${maxRetries}`);
  }
  return retry<T>({
    count: maxRetries,
    delay: (err: unknown, attempt: number) => {
      if (!retryable(err)) return throwError(() => err);
      onRetry?.(err, attempt);
      return timer(policy.delay(attempt - 1), scheduler);
    },
  });
}
