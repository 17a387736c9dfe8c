import {
  asyncScheduler,
  from,
  Observable,
  type ObservableInput,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';

export interface InOrderPerKeyOptions {
  /** How long a key's group stays open with nothing queued and nothing in flight. */
  idleCloseMs: number;
  scheduler?: SchedulerLike;
  /**
   * Called with the number of open groups each time a group opens or closes (also while the
   * result is torn down). Meant for tests and metrics; it must not push into the source.
   */
  onGroupsChanged?: (open: number) => void;
}

/** One key's group: its queue, whether its work is running, and its idle bookkeeping. */
interface Lane<T> {
  /**
   * The values from `head` to `tail`. Reused, not emptied: a lane that goes idle and wakes again
   * writes into the slots it has rather than allocating new ones (it keeps the size of its
   * deepest queue until it closes).
   */
  queue: (T | undefined)[];
  head: number;
  tail: number;
  busy: boolean;
  inner: Subscription | undefined;
  idleSince: number;
  timer: Subscription | undefined;
}

/**
 * Runs `work` for each value, strictly one after another for values with the same key, in
 * arrival order, while different keys run concurrently. The results of each key come out in
 * arrival order; results of different keys interleave as their work finishes. This is
 * `groupBy(keyOf, { duration })` + `concatMap(work)` per group + `mergeMap` over the groups,
 * with idle groups closed.
 *
 * ```text
 * idleCloseMs = 3 (one character = 1 ms), work = v => timer(v.ms).pipe(map(() => v))
 * a = { key: 1, ms: 4 }   b = { key: 2, ms: 1 }   c = { key: 1, ms: 1 }   d = { key: 1, ms: 1 }
 *
 * source:      -ab-c---------d---|
 * result:      ---b-ac--------d--|
 * open groups: -12---1--0----1---0
 * ```
 *
 * `b` overtakes `a` (another key), `c` waits for `a` (the same key) and runs from 5 to 6.
 * Key 2 is idle from 3 and closes at 6, key 1 from 6 and closes at 9; `d` opens a new group
 * for key 1. Completion waits for the work of every value already received.
 *
 * Written by hand rather than composed from `groupBy` + `concatMap`: the composition costs a
 * subscription chain per value and a timer set and cleared per value, which is most of the
 * graph's budget per message (docs/benchmarks.md). Here a group is a FIFO array; work
 * that answers synchronously with an array is emitted without any subscription; each idle
 * group has at most one timer, re-armed when it fires rather than cleared on every value.
 *
 * Why closing cannot lose or reorder a value: a group closes only when, at the moment its
 * timer fires, it has nothing queued, nothing in flight, and has been idle for
 * `idleCloseMs`. A value arriving after that opens a new group, and the old one had no work
 * left to overlap with. When the source completes, idle groups close at once and busy ones
 * as soon as their queue is drained.
 *
 * A value whose key is `undefined` belongs to no group: its work starts at once, without
 * waiting for anything, and its results come out as soon as they are ready.
 *
 * An error from `keyOf` or from any work errors the result and cancels all work in flight.
 *
 * @throws RangeError if `idleCloseMs` is not a finite number > 0.
 */
export function inOrderPerKey<T, K, R>(
  keyOf: (value: T) => K | undefined,
  work: (value: T) => ObservableInput<R>,
  options: InOrderPerKeyOptions,
): OperatorFunction<T, R> {
  const { idleCloseMs, scheduler = asyncScheduler, onGroupsChanged } = options;
  if (!Number.isFinite(idleCloseMs) || idleCloseMs <= 0) {
    throw new RangeError(`idleCloseMs must be a finite number > 0, got ${idleCloseMs}`);
  }

  return (source) =>
    new Observable<R>((subscriber) => {
      const lanes = new Map<K, Lane<T>>();
      let sourceDone = false;

      const closeLane = (key: K, lane: Lane<T>): void => {
        lane.timer?.unsubscribe();
        lane.timer = undefined;
        lanes.delete(key);
        onGroupsChanged?.(lanes.size);
      };

      const completeIfDone = (): void => {
        if (sourceDone && lanes.size === 0 && loose.size === 0) subscriber.complete();
      };

      const onTimer = (key: K, lane: Lane<T>): void => {
        lane.timer = undefined;
        if (lane.busy || lanes.get(key) !== lane) return;
        const idleFor = scheduler.now() - lane.idleSince;
        if (idleFor >= idleCloseMs) closeLane(key, lane);
        else lane.timer = scheduler.schedule(() => onTimer(key, lane), idleCloseMs - idleFor);
      };

      const becomeIdle = (key: K, lane: Lane<T>): void => {
        // Drained: every slot is undefined already, so the array is kept for the next values
        // (truncating it would free its backing store, to be allocated again by the next value).
        lane.head = 0;
        lane.tail = 0;
        if (sourceDone) {
          closeLane(key, lane);
          completeIfDone();
          return;
        }
        lane.idleSince = scheduler.now();
        lane.timer ??= scheduler.schedule(() => onTimer(key, lane), idleCloseMs);
      };

      // Runs the lane's queued values one after another; returns when the queue is empty
      // (the lane is idle) or a value's work is still running (its completion resumes here).
      const drain = (key: K, lane: Lane<T>): void => {
        while (lane.head < lane.tail) {
          if (subscriber.closed) return;
          const value = lane.queue[lane.head] as T;
          lane.queue[lane.head++] = undefined;
          lane.busy = true;
          let input: ObservableInput<R>;
          try {
            input = work(value);
          } catch (err) {
            subscriber.error(err);
            return;
          }
          if (Array.isArray(input)) {
            for (const r of input as R[]) subscriber.next(r);
            lane.busy = false;
            continue;
          }
          let sync = true;
          let completedSync = false;
          const inner = from(input).subscribe({
            next: (r) => subscriber.next(r),
            error: (err) => subscriber.error(err),
            complete: () => {
              lane.inner = undefined;
              lane.busy = false;
              if (sync) completedSync = true;
              else drain(key, lane);
            },
          });
          sync = false;
          if (!completedSync) {
            if (lane.busy) lane.inner = inner;
            return;
          }
        }
        if (!subscriber.closed) becomeIdle(key, lane);
      };

      // A value without a key has no order to keep: its work starts at once, beside the lanes.
      const loose = new Set<Subscription>();
      const runUnordered = (value: T): void => {
        let input: ObservableInput<R>;
        try {
          input = work(value);
        } catch (err) {
          subscriber.error(err);
          return;
        }
        if (Array.isArray(input)) {
          for (const r of input as R[]) subscriber.next(r);
          return;
        }
        let done = false;
        let inner: Subscription | undefined;
        inner = from(input).subscribe({
          next: (r) => subscriber.next(r),
          error: (err) => subscriber.error(err),
          complete: () => {
            done = true;
            if (inner !== undefined) loose.delete(inner);
            completeIfDone();
          },
        });
        if (!done) loose.add(inner);
      };

      const sub = source.subscribe({
        next: (value) => {
          let key: K | undefined;
          try {
            key = keyOf(value);
          } catch (err) {
            subscriber.error(err);
            return;
          }
          if (key === undefined) {
            runUnordered(value);
            return;
          }
          let lane = lanes.get(key);
          if (lane === undefined) {
            lane = {
              queue: [],
              head: 0,
              tail: 0,
              busy: false,
              inner: undefined,
              idleSince: 0,
              timer: undefined,
            };
            lanes.set(key, lane);
            onGroupsChanged?.(lanes.size);
          }
          lane.queue[lane.tail++] = value;
          if (!lane.busy) drain(key, lane);
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          sourceDone = true;
          for (const [key, lane] of [...lanes]) {
            if (!lane.busy && lane.head >= lane.tail) closeLane(key, lane);
          }
          completeIfDone();
        },
      });

      return () => {
        sub.unsubscribe();
        const open = lanes.size;
        for (const lane of lanes.values()) {
          lane.inner?.unsubscribe();
          lane.timer?.unsubscribe();
        }
        lanes.clear();
        for (const inner of loose) inner.unsubscribe();
        loose.clear();
        if (open > 0) onGroupsChanged?.(0);
      };
    });
}
