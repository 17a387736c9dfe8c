import {
  asyncScheduler,
  concatMap,
  finalize,
  from,
  type GroupedObservable,
  groupBy,
  mergeMap,
  Observable,
  type ObservableInput,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
  tap,
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

interface GroupState {
  /** Values the group received whose work has not completed yet: queued plus in flight. */
  pending: number;
  idleTimer: Subscription | undefined;
  /** Closes the group; set only while groupBy listens to the group's duration notifier. */
  close: (() => void) | undefined;
}

/**
 * Runs `work` for each value, strictly one after another for values with the same key, in
 * arrival order, while different keys run concurrently. The results of each key come out in
 * arrival order; results of different keys interleave as their work finishes.
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
 * Built on `groupBy(keyOf, { duration })` + `concatMap(work)` per group + `mergeMap` over the
 * groups. A group closes once it has held nothing queued and nothing in flight for
 * `idleCloseMs`, so memory follows the keys active lately, not every key ever seen.
 *
 * Why closing cannot lose or reorder a value: the idle timer starts only when the group's last
 * work completes and is cancelled by the next value of the group, so it fires on a drained
 * group, and the group is completed and forgotten by groupBy in that same synchronous step.
 * A value arriving after that finds no group and opens a new one, whose work cannot overlap
 * the old group's since the old one had none left. Completing a group that still has queued
 * values (which is what happens to every group when the source completes) is safe as well:
 * concatMap keeps draining its buffer after its source completes.
 *
 * An error from `keyOf` or from any work errors the result and cancels all work in flight.
 *
 * @throws RangeError if `idleCloseMs` is not a finite number > 0.
 */
export function inOrderPerKey<T, K, R>(
  keyOf: (value: T) => K,
  work: (value: T) => ObservableInput<R>,
  options: InOrderPerKeyOptions,
): OperatorFunction<T, R> {
  const { idleCloseMs, scheduler = asyncScheduler, onGroupsChanged } = options;
  if (!Number.isFinite(idleCloseMs) || idleCloseMs <= 0) {
    throw new RangeError(`idleCloseMs must be a finite number > 0, got ${idleCloseMs}`);
  }

  return (source) =>
    new Observable<R>((subscriber) => {
      // Keyed by the group object, not the key: a reopened key is a new group with fresh state.
      const states = new WeakMap<GroupedObservable<K, T>, GroupState>();
      let open = 0;

      // groupBy hands the group to mergeMap and to the duration selector in an order that is
      // its own business, so whichever asks first creates the state.
      const stateOf = (group: GroupedObservable<K, T>): GroupState => {
        let state = states.get(group);
        if (state === undefined) {
          state = { pending: 0, idleTimer: undefined, close: undefined };
          states.set(group, state);
        }
        return state;
      };

      const cancelIdleTimer = (state: GroupState): void => {
        state.idleTimer?.unsubscribe();
        state.idleTimer = undefined;
      };

      // Once groupBy stops listening (source completed, error, teardown) `close` is unset and
      // no timer is armed that nobody would cancel.
      const armIdleTimer = (state: GroupState): void => {
        const close = state.close;
        if (state.pending > 0 || close === undefined) return;
        cancelIdleTimer(state);
        state.idleTimer = scheduler.schedule(close, idleCloseMs);
      };

      const closeWhenIdle = (group: GroupedObservable<K, T>): Observable<void> =>
        new Observable<void>((closer) => {
          const state = stateOf(group);
          state.close = () => closer.next();
          return () => {
            state.close = undefined;
            cancelIdleTimer(state);
          };
        });

      const sub = source
        .pipe(
          groupBy(keyOf, { duration: closeWhenIdle }),
          mergeMap((group) => {
            const state = stateOf(group);
            open++;
            onGroupsChanged?.(open);
            return group.pipe(
              tap(() => {
                state.pending++;
                cancelIdleTimer(state);
              }),
              concatMap((value) =>
                from(work(value)).pipe(
                  tap({
                    complete: () => {
                      state.pending--;
                      armIdleTimer(state);
                    },
                  }),
                ),
              ),
              finalize(() => {
                open--;
                onGroupsChanged?.(open);
              }),
            );
          }),
        )
        .subscribe(subscriber);

      return () => sub.unsubscribe();
    });
}
