import { from, Observable, type ObservableInput, type OperatorFunction, type Subscription } from 'rxjs';

export interface BarrierOptions<T> {
  /**
   * Projections running at once, at most (≥ 1); a function is asked at every decision, so
   * a limit that grows lets more start with the next value or completion.
   */
  readonly concurrency: number | (() => number);
  /** A value that must run alone: it starts once everything before it is done, and nothing after it starts until it is. */
  readonly alone: (value: T) => boolean;
  /**
   * A value that arrives while others wait may be joined to the last of them: returns the
   * joined value, or undefined to queue the new one by itself. So batches that pile up while
   * the projections are busy go out as fewer, larger ones. Whether the joined value must run
   * alone is asked of the joined value.
   */
  readonly join?: (waiting: T, next: T) => T | undefined;
}

/**
 * `mergeMap(project, concurrency)`, except that some values are barriers: a value for which
 * `alone(value)` holds waits until every projection started before it has completed, runs
 * by itself, and holds back the values after it until it completes. Values start in source
 * order; outputs are emitted as the projections produce them (completion order, as mergeMap).
 * Completes when the source has completed and every projection has; the first error, from
 * the source or a projection, is the output's.
 *
 * ```
 * source:    -a-b-c-T-d-|        T alone; each projection takes 4 frames; concurrency 2
 * mergeMapWithBarriers(v => timer(4).pipe(map(() => v)), { concurrency: 2, alone: v => v === 'T' })
 * output:    -----a-b-c---T---(d|)
 * ```
 *
 * (`c` starts when `a` completes; `T` waits for `b` and `c`; `d` waits for `T`.)
 *
 * With `join`, values that wait are joined (here: strings of at most two letters; concurrency 1;
 * each projection takes 3 frames):
 *
 * ```
 * source:    abcde|
 * output:    ---a--x--(y|)       x = 'bc' (c joined b while a ran), y = 'de'
 * ```
 *
 * @throws RangeError if `concurrency` is a number and not a whole number ≥ 1.
 */
export function mergeMapWithBarriers<T, R>(
  project: (value: T) => ObservableInput<R>,
  { concurrency, alone, join }: BarrierOptions<T>,
): OperatorFunction<T, R> {
  if (typeof concurrency === 'number' && (!Number.isInteger(concurrency) || concurrency < 1))
    throw new RangeError(`concurrency must be a whole number >= 1, got ${concurrency}`);
  const limit =
    typeof concurrency === 'number' ? () => concurrency : () => Math.max(1, Math.floor(concurrency()));
  return (source) =>
    new Observable<R>((subscriber) => {
      const waiting: T[] = [];
      const running = new Set<Subscription>();
      let active = 0;
      let aloneRunning = false;
      let sourceDone = false;
      let draining = false;
      let again = false;

      const start = (value: T, isAlone: boolean) => {
        active++;
        if (isAlone) aloneRunning = true;
        let inner: Subscription | undefined;
        let done = false;
        inner = from(project(value)).subscribe({
          next: (r) => subscriber.next(r),
          error: (err) => subscriber.error(err),
          complete: () => {
            done = true;
            active--;
            if (isAlone) aloneRunning = false;
            if (inner !== undefined) running.delete(inner);
            drain();
          },
        });
        if (!done) running.add(inner);
      };

      // A loop rather than recursion: projections that complete synchronously start the next.
      const drain = () => {
        if (draining) {
          again = true;
          return;
        }
        draining = true;
        do {
          again = false;
          while (waiting.length > 0 && !aloneRunning && !subscriber.closed) {
            const isAlone = alone(waiting[0]!);
            if (isAlone ? active > 0 : active >= limit()) break;
            start(waiting.shift()!, isAlone);
          }
        } while (again);
        draining = false;
        if (sourceDone && active === 0 && waiting.length === 0) subscriber.complete();
      };

      const outer = source.subscribe({
        next: (value) => {
          const joined = join !== undefined && waiting.length > 0 ? join(waiting.at(-1)!, value) : undefined;
          if (joined === undefined) waiting.push(value);
          else waiting[waiting.length - 1] = joined;
          drain();
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          sourceDone = true;
          drain();
        },
      });

      return () => {
        outer.unsubscribe();
        for (const inner of running) inner.unsubscribe();
        running.clear();
        waiting.length = 0;
      };
    });
}
