import {
  asyncScheduler,
  Observable,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import type { OffsetTracker } from '../model/offset-tracker.js';
import type { Completion } from '../model/outcome.js';

/** Commit `offset` (last done + 1) and publish `payloads` atomically with it. */
export interface CommitRequest<P> {
  readonly offset: string;
  readonly payloads: readonly P[];
}

export interface CommitInOrderOptions {
  /** Emit at most this long after the committable offset first moved. */
  readonly intervalMs: number;
  /** …or as soon as this many records became committable. */
  readonly every: number;
  readonly scheduler?: SchedulerLike;
}

/**
 * Turns completions, in any order, into commit requests that never pass an
 * unfinished record. Requests are batched by time (`intervalMs`) or count
 * (`every`), and the last one is flushed when the source completes. On error
 * nothing more is committed: unfinished work is replayed after a restart.
 *
 * The tracker is shared with the intake, which registers every offset in order.
 *
 * ```
 * registered:  0 1 2 3
 * completions: --2--0-1---3|       (intervalMs = 3 frames, every = ∞)
 * commitInOrder
 * output:      --------a---(b|)    a = { offset: '3' }: 2 waits for 0; the timer starts
 *                                      when 0 moves the offset, and 1 joins that batch
 *                                  b = { offset: '4' }: flushed at completion
 * ```
 */
export function commitInOrder<P>(
  tracker: OffsetTracker<P>,
  { intervalMs, every, scheduler = asyncScheduler }: CommitInOrderOptions,
): OperatorFunction<Completion<P>, CommitRequest<P>> {
  return (source) =>
    new Observable<CommitRequest<P>>((subscriber) => {
      let payloads: P[] = [];
      let released = 0;
      let emitted: string | undefined;
      let timer: Subscription | undefined;

      const flush = () => {
        timer?.unsubscribe();
        timer = undefined;
        const offset = tracker.commitOffset;
        if (offset === undefined || offset === emitted) return;
        emitted = offset;
        const out = payloads;
        payloads = [];
        released = 0;
        subscriber.next({ offset, payloads: out });
      };

      const sub = source.subscribe({
        next: ({ offset, payloads: p }) => {
          const pendingBefore = tracker.pending;
          let ready: P[];
          try {
            ready = tracker.complete(offset, p);
          } catch (err) {
            subscriber.error(err);
            return;
          }
          for (const x of ready) payloads.push(x);
          const passed = pendingBefore - tracker.pending;
          if (passed === 0) return;
          released += passed;
          if (released >= every) flush();
          else timer ??= scheduler.schedule(flush, intervalMs);
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          flush();
          subscriber.complete();
        },
      });
      return () => {
        timer?.unsubscribe();
        sub.unsubscribe();
      };
    });
}
