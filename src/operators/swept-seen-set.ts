import type { SchedulerLike, Subscription } from 'rxjs';
import { assertWindow, type WindowedSeenSet } from '../model/seen-window.js';

// Compacting the queue only once its dead head is large and at least half of it keeps
// each value's share of the copying O(1).
const COMPACT_AFTER = 1024;

/**
 * The dedup window's keys in a `Set` (any key type): the reference the off-heap
 * `createWindowedIdSet` answers like. Memory is bounded by the keys of one window
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
