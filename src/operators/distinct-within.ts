import {
  asyncScheduler,
  type MonoTypeOperatorFunction,
  Observable,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import { assertWindow, type WindowedSeenSet } from '../model/seen-window.js';

// Compacting the queue only once its dead head is large and at least half of it keeps
// each value's share of the copying O(1).
const COMPACT_AFTER = 1024;

/**
 * Creates the set behind {@link distinctWithin}. Memory is bounded by the keys of one window
 * (plus those that expired since the last eviction), never by history.
 *
 * `now` must not go backwards: the queue relies on admission times growing, and a clock that
 * steps back by D keeps keys blocked up to D longer.
 */
export function createWindowedSeenSet<K>(windowMs: number, now: () => number): WindowedSeenSet<K> {
  assertWindow(windowMs);
  // Held keys; when each was admitted is in `times` (a key is held once at most).
  const held = new Set<K>();
  // The same keys in admission order, so that expiry is a walk from the head rather than a scan.
  let keys: K[] = [];
  let times: number[] = [];
  let head = 0;

  const evictUntil = (t: number): void => {
    while (head < keys.length) {
      const at = times[head] as number;
      if (t - at < windowMs) break;
      held.delete(keys[head] as K);
      head++;
    }
    if (head === keys.length) {
      keys = [];
      times = [];
      head = 0;
    } else if (head >= COMPACT_AFTER && head * 2 >= keys.length) {
      keys = keys.slice(head);
      times = times.slice(head);
      head = 0;
    }
  };

  return {
    admit(key) {
      const t = now();
      evictUntil(t);
      // Every key still held is inside its window: evictUntil removed the rest. One hash
      // lookup, not two: the set grows only if the key was not held.
      const before = held.size;
      held.add(key);
      if (held.size === before) return false;
      keys.push(key);
      times.push(t);
      return true;
    },
    evictExpired() {
      evictUntil(now());
    },
    get emptyAt() {
      const newest = times[times.length - 1];
      return head < keys.length && newest !== undefined ? newest + windowMs : undefined;
    },
    get size() {
      return held.size;
    },
    clear() {
      held.clear();
      keys = [];
      times = [];
      head = 0;
    },
  };
}

export interface DistinctWithinOptions<T> {
  /** Called synchronously with each dropped value, before the next value is looked at. */
  onDuplicate?: (value: T) => void;
  scheduler?: SchedulerLike;
}

/**
 * Drops a value whose key was emitted less than `windowMs` ago. Once the window of a key has
 * passed, the key is let through again and opens a new window. Unlike `distinct`, memory is
 * bounded by the window, not by every key ever seen.
 *
 * ```text
 * keyOf = v => v, windowMs = 5 (one character = 1 ms)
 *
 * source:    -a--a-a--ba---b-|
 * result:    -a----a--b----b-|
 * duplicate: ----a-----a------      (values handed to onDuplicate)
 * ```
 *
 * The window of a key is half-open, `[t, t + windowMs)`: `a` at 4 is 3 ms after `a` at 1 and
 * is dropped; `a` at 6 is exactly 5 ms after it and is admitted, opening a new window, so `a`
 * at 10 is dropped; `b` at 14 is exactly 5 ms after `b` at 9 and is admitted.
 *
 * Dropped values are only dropped, so a caller that must account for every value (marking a
 * message done, for instance) does so in `onDuplicate`.
 *
 * Expired keys are evicted on each value and, when the source falls silent, by a single timer
 * set for when the newest key expires, so an idle partition does not hold a burst's keys.
 * Errors and completion pass through; a throwing `keyOf` or `onDuplicate` errors the result.
 *
 * @throws RangeError if `windowMs` is not a finite number > 0.
 */
export function distinctWithin<T, K>(
  keyOf: (value: T) => K,
  windowMs: number,
  options: DistinctWithinOptions<T> = {},
): MonoTypeOperatorFunction<T> {
  assertWindow(windowMs);
  const { onDuplicate, scheduler = asyncScheduler } = options;

  return (source) =>
    new Observable<T>((subscriber) => {
      const seen = createSweptSeenSet<K>(windowMs, scheduler);

      const sub = source.subscribe({
        next: (value) => {
          let admitted: boolean;
          try {
            admitted = seen.admit(keyOf(value));
            if (!admitted) onDuplicate?.(value);
          } catch (err) {
            subscriber.error(err);
            return;
          }
          if (admitted) subscriber.next(value);
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

/**
 * A windowed seen set that also forgets in silence: one timer at most, set for when the
 * newest key expires (while values flow, `admit` evicts; the timer only matters when the
 * source falls silent, so an idle partition does not hold a burst's keys).
 */
export function createSweptSeenSet<K>(
  windowMs: number,
  scheduler: SchedulerLike,
  create: (windowMs: number, now: () => number) => WindowedSeenSet<K> = createWindowedSeenSet,
): { admit(key: K): boolean; dispose(): void } {
  const seen = create(windowMs, () => scheduler.now());
  let sweep: Subscription | undefined;
  const scheduleSweep = (): void => {
    if (sweep !== undefined) return;
    const at = seen.emptyAt;
    if (at === undefined) return;
    sweep = scheduler.schedule(
      () => {
        sweep = undefined;
        seen.evictExpired();
        scheduleSweep();
      },
      Math.max(0, at - scheduler.now()),
    );
  };
  return {
    admit(key) {
      const admitted = seen.admit(key);
      if (admitted) scheduleSweep();
      return admitted;
    },
    dispose() {
      sweep?.unsubscribe();
      sweep = undefined;
      seen.clear();
    },
  };
}
