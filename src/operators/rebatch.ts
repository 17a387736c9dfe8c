import {
  asyncScheduler,
  Observable,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';

/**
 * Collects values into arrays. A batch closes when it holds `maxSize` values or when
 * `maxWaitMs` have passed since its FIRST value arrived, whichever comes first.
 *
 * ```text
 * maxSize = 3, maxWaitMs = 5 (one character = 1 ms)
 *
 * source: -abc---d--------ef-|
 * result: ---x--------y------(z|)      x = [a, b, c]   y = [d]   z = [e, f]
 *            ^        ^       ^
 *            |        |       source completed: the partial batch is flushed, then complete
 *            |        5 ms after d opened the batch
 *            3 values
 * ```
 *
 * Unlike `bufferTime(maxWaitMs, null, maxSize)` there is no timer ticking while nothing
 * arrives: the timer starts with the first value of a batch, so a silent source costs nothing
 * and never yields an empty batch (from 12 to 16 above nothing is emitted).
 *
 * On error the partial batch is dropped and the error passes on. The graph fails loudly rather
 * than ingest the values before a failure as if nothing happened: whoever reads the error
 * restarts from the last committed offset, which never advanced past this unfinished batch,
 * so the dropped values are read again.
 *
 * @throws RangeError if `maxSize` is not an integer >= 1 or `maxWaitMs` not a finite number > 0.
 */
export function rebatch<T>(
  maxSize: number,
  maxWaitMs: number,
  scheduler: SchedulerLike = asyncScheduler,
): OperatorFunction<T, T[]> {
  if (!Number.isInteger(maxSize) || maxSize < 1) {
    throw new RangeError(`maxSize must be an integer >= 1, got ${maxSize}`);
  }
  if (!Number.isFinite(maxWaitMs) || maxWaitMs <= 0) {
    throw new RangeError(`maxWaitMs must be a finite number > 0, got ${maxWaitMs}`);
  }

  return (source) =>
    new Observable<T[]>((subscriber) => {
      let batch: T[] = [];
      let timer: Subscription | undefined;

      const cancelTimer = (): void => {
        timer?.unsubscribe();
        timer = undefined;
      };

      // The batch is swapped out before it is handed on, so a consumer that synchronously
      // feeds the source starts a fresh batch (and a fresh timer) instead of growing this one.
      const emit = (): void => {
        cancelTimer();
        const full = batch;
        batch = [];
        subscriber.next(full);
      };

      const sub = source.subscribe({
        next: (value) => {
          batch.push(value);
          if (batch.length >= maxSize) emit();
          else if (batch.length === 1) timer = scheduler.schedule(emit, maxWaitMs);
        },
        error: (err) => {
          cancelTimer();
          batch = [];
          subscriber.error(err);
        },
        complete: () => {
          if (batch.length > 0) emit();
          subscriber.complete();
        },
      });

      return () => {
        sub.unsubscribe();
        cancelTimer();
        batch = [];
      };
    });
}
