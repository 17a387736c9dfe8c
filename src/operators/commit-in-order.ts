import {
  asyncScheduler,
  defer,
  Observable,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
  take,
} from 'rxjs';
import type { OffsetTracker } from '../model/offset-tracker.js';
import type { OutRecord } from '../model/out-record.js';
import type { Done } from '../model/outcome.js';
import type { CommitSink } from '../sinks/ports.js';
import { type CommitPolicy, nextCommitStep, stayedQuiet } from './commit-policy.js';

/** A durable commit: the offset (last done + 1) and what was published with it. */
export interface Commit {
  readonly offset: string;
  readonly records: readonly OutRecord[];
}

export interface CommitInOrderOptions extends CommitPolicy {
  readonly scheduler?: SchedulerLike;
}

/**
 * Turns finished records, in any order, into commits that never pass an unfinished
 * record, and makes them durable through the commit sink: one at a time, each publishing
 * the triggers and dead letters of the records it passes in the same transaction as the
 * offset. Emits each commit once it is durable.
 *
 * Commits are batched by time (`intervalMs`) or count (`every`) (see commit-policy.ts, which
 * decides when), and coalesced: while one
 * is in flight, what becomes committable waits and goes out as one commit after it, so a
 * slow transaction coordinator never builds a queue (and the records it holds back still
 * count as unfinished in the tracker, which pauses intake). A commit waits less when the
 * partition goes quiet (`quiet`): with a burst's worth of records committable, every record
 * taken in done and nothing new taken in for `quiet.ms`, waiting longer would gather nothing
 * more; a trickle of records never gathers `quiet.records` and keeps to the interval, so
 * quiet commits do not multiply transactions at low traffic. The last commit is flushed
 * when the source completes, and the result completes after it is durable. On an error
 * (of the source or the sink) nothing more is committed: unfinished work is replayed.
 *
 * ```
 * registered:  0 1 2 3
 * finished:    --2--0-1---3|        (intervalMs = 3 frames, every = ∞, sink answers at once)
 * commitInOrder
 * output:      --------a---(b|)     a = { offset: '3' }: 2 waits for 0; the timer starts
 *                                       when 0 moves the offset, and 1 joins that commit
 *                                   b = { offset: '4' }: flushed at completion
 *
 * registered:  0 1 2
 * finished:    --0--1-2--------|    (intervalMs = 9, quiet = { ms: 2, records: 2 })
 * commitInOrder
 * output:      ---------c------|    c = { offset: '3' }: at 7 every record taken in is done
 *                                       and 3 are committable; nothing came in by 9, so
 *                                       it commits then, not when the interval ends (11)
 * ```
 */
export function commitInOrder(
  tracker: OffsetTracker<OutRecord>,
  sink: CommitSink,
  { scheduler = asyncScheduler, ...policy }: CommitInOrderOptions,
): OperatorFunction<readonly Done[], Commit> {
  return (source) =>
    new Observable<Commit>((subscriber) => {
      let released = 0;
      let timer: Subscription | undefined;
      let quietTimer: Subscription | undefined;
      let inFlight: Subscription | undefined;
      let committing = false;
      let sourceDone = false;

      const cancelTimer = () => {
        timer?.unsubscribe();
        timer = undefined;
        quietTimer?.unsubscribe();
        quietTimer = undefined;
      };

      const commitNow = (): void => {
        cancelTimer();
        if (committing) return;
        const next = tracker.take();
        if (next === undefined) {
          if (sourceDone) subscriber.complete();
          return;
        }
        released = 0;
        committing = true;
        let done = false;
        const sub = defer(() => sink.commit(next.offset, next.payloads))
          .pipe(take(1))
          .subscribe({
            next: () => {
              done = true;
              tracker.confirm(next.through);
              subscriber.next({ offset: next.offset, records: next.payloads });
            },
            error: (err) => subscriber.error(err),
            complete: () => {
              committing = false;
              inFlight = undefined;
              if (!done) {
                subscriber.error(new Error(`commit of offset ${next.offset} answered nothing`));
                return;
              }
              step();
            },
          });
        if (committing) inFlight = sub;
      };

      /** Does what the policy says, between commits. */
      const step = () => {
        const next = nextCommitStep(policy, { released, pending: tracker.pending, sourceDone });
        if (next.kind === 'commit') commitNow();
        else if (next.kind === 'wait') {
          timer ??= scheduler.schedule(commitNow, policy.intervalMs);
          if (next.quietMs !== undefined) waitQuiet(next.quietMs);
        }
      };

      /** (Re)starts the quiet wait: it commits if nothing comes in meanwhile and everything stays done. */
      const waitQuiet = (ms: number) => {
        quietTimer?.unsubscribe();
        const then = { pending: tracker.pending, registered: tracker.registered };
        quietTimer = scheduler.schedule(() => {
          quietTimer = undefined;
          if (!committing && stayedQuiet(then, tracker)) commitNow();
        }, ms);
      };

      const sub = source.subscribe({
        next: (batch) => {
          const before = tracker.pending;
          try {
            for (const d of batch) tracker.complete(d.seq, d.payloads);
          } catch (err) {
            subscriber.error(err);
            return;
          }
          const passed = before - tracker.pending;
          if (passed === 0) return;
          released += passed;
          if (!committing) step();
        },
        error: (err) => subscriber.error(err),
        complete: () => {
          sourceDone = true;
          if (!committing) step();
        },
      });

      return () => {
        sub.unsubscribe();
        cancelTimer();
        inFlight?.unsubscribe();
      };
    });
}
