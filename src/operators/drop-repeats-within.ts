import {
  asyncScheduler,
  type MonoTypeOperatorFunction,
  Observable,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import { decide, type Entry } from '../model/outcome.js';
import { createWindowedSeenSet } from './distinct-within.js';

/**
 * Decides an open entry a duplicate when a message with its id entered less than
 * `windowMs` ago: the cheap, in-memory first layer of dedup, before any enrich or
 * round trip. Memory is bounded by the ids of one window (`createWindowedSeenSet`).
 * Decided entries pass untouched; everything is emitted, in order.
 *
 * ```text
 * windowMs = 5 (one character = 1 ms); letters are message ids
 *
 * source: -a--a-a--ba---b-|
 * result: -a--A-a--bA---b-|      A = a decided { kind: 'duplicate', by: 'window' }
 * ```
 *
 * The window of an id is half-open, `[t, t + windowMs)`: `a` at 6 is exactly 5 ms after
 * `a` at 1 and opens a new window, so `a` at 10 is a duplicate.
 */
export function dropRepeatsWithin(
  windowMs: number,
  scheduler: SchedulerLike = asyncScheduler,
): MonoTypeOperatorFunction<Entry> {
  return (source) =>
    new Observable<Entry>((subscriber) => {
      const seen = createWindowedSeenSet<string>(windowMs, () => scheduler.now());
      let sweep: Subscription | undefined;
      // One timer at most: while values flow, admit() evicts; the timer only matters in silence.
      const scheduleSweep = (): void => {
        const at = seen.emptyAt;
        if (sweep !== undefined || at === undefined) return;
        sweep = scheduler.schedule(
          () => {
            sweep = undefined;
            seen.evictExpired();
            scheduleSweep();
          },
          Math.max(0, at - scheduler.now()),
        );
      };
      const sub = source.subscribe({
        next: (entry) => {
          const id = entry.outcome === undefined ? entry.message?.id : undefined;
          if (id === undefined) subscriber.next(entry);
          else if (seen.admit(id)) {
            scheduleSweep();
            subscriber.next(entry);
          } else subscriber.next(decide(entry, { kind: 'duplicate', by: 'window' }));
        },
        error: (err) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
      return () => {
        sub.unsubscribe();
        sweep?.unsubscribe();
        seen.clear();
      };
    });
}
