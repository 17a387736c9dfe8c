import { asyncScheduler, type MonoTypeOperatorFunction, Observable, type SchedulerLike } from 'rxjs';
import { decide, type Entry } from '../model/outcome.js';
import { assertWindow } from '../model/seen-window.js';
import { createWindowedIdSet } from '../model/windowed-id-set.js';
import { createSweptSeenSet } from './swept-seen-set.js';

/**
 * Decides an open entry a duplicate when a message with its id entered less than
 * `windowMs` ago: the cheap, in-memory first layer of dedup, before any enrich or
 * round trip. Memory is bounded by the ids of one window, kept off the V8 heap
 * (`createWindowedIdSet`: the window of a busy partition holds hundreds of thousands).
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
 *
 * @throws RangeError if `windowMs` is not a finite number > 0.
 */
export function dropRepeatsWithin(
  windowMs: number,
  scheduler: SchedulerLike = asyncScheduler,
): MonoTypeOperatorFunction<Entry> {
  assertWindow(windowMs);
  return (source) =>
    new Observable<Entry>((subscriber) => {
      const seen = createSweptSeenSet<string>(windowMs, scheduler, createWindowedIdSet);
      const sub = source.subscribe({
        next: (entry) => {
          const id = entry.outcome === undefined ? entry.message?.id : undefined;
          if (id === undefined || seen.admit(id)) subscriber.next(entry);
          else subscriber.next(decide(entry, { kind: 'duplicate', by: 'window' }));
        },
        error: (err) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
      return () => {
        sub.unsubscribe();
        seen.dispose();
      };
    });
}
