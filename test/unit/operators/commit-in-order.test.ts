import {
  EMPTY,
  map,
  type SchedulerAction,
  type SchedulerLike,
  Subject,
  type Subscription,
  throwError,
  VirtualTimeScheduler,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import type { OutRecord } from '../../../src/model/out-record.js';
import type { Done } from '../../../src/model/outcome.js';
import { type Commit, commitInOrder } from '../../../src/operators/commit-in-order.js';
import type { CommitSink } from '../../../src/sinks/ports.js';
import { InMemoryCommitSink } from '../../support/fakes/in-memory-ports.js';
import { unhandledErrorsOf } from '../support/unhandled-errors.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const NEVER_BY_COUNT = Number.POSITIVE_INFINITY;

/** A tracker with these offsets registered (seq 0, 1, … in order), as the intake would have done. */
const registered = (...offsets: number[]) => {
  const t = new OffsetTracker<OutRecord>();
  for (const o of offsets) t.register(String(o));
  return t;
};

/** A trigger-like record, named for readability. */
const out = (name: string): OutRecord => ({ topic: 'out', key: null, value: name });

/** commitInOrder reads only seq and payloads; the entry is whatever the earlier stages decided. */
const done = (seq: number, ...payloads: string[]): Done => ({
  seq,
  payloads: payloads.map(out),
  entry: {} as Done['entry'],
});

/** Marble values: each character is a seq, finishing alone in a batch of one. */
const batches = (seqs: string, payloads: Record<string, string[]> = {}) =>
  Object.fromEntries([...seqs].map((s): [string, Done[]] => [s, [done(Number(s), ...(payloads[s] ?? []))]]));

const commit = (offset: string, ...records: string[]): Commit => ({ offset, records: records.map(out) });

describe('commitInOrder', () => {
  it('behaves as its marble diagram', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2, 3);
      const sink = new InMemoryCommitSink();
      const source = cold('--2--0-1---3|', batches('0123'));
      const result = '     --------a---(b|)';
      expectObservable(
        source.pipe(commitInOrder(tracker, sink, { intervalMs: 3, every: NEVER_BY_COUNT })),
      ).toBe(result, { a: commit('3'), b: commit('4') });
    });
  });

  it('emits each commit only once the sink made it durable, and the sink holds exactly those', () => {
    const tracker = registered(0, 1, 2);
    const sink = new InMemoryCommitSink();
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('0-1-2|', batches('012', { 0: ['t0'], 2: ['t2'] }));
      expectObservable(
        source.pipe(commitInOrder(tracker, sink, { intervalMs: 1, every: NEVER_BY_COUNT })),
      ).toBe('-a-b-(c|)', { a: commit('1', 't0'), b: commit('2'), c: commit('3', 't2') });
    });
    expect(sink.commits).toEqual([commit('1', 't0'), commit('2'), commit('3', 't2')]);
  });

  describe('batching by intervalMs', () => {
    it('starts the timer when the committable offset first moves, not at the first completion', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        // 1 completes at 1 (offset does not move); 0 at 6 moves it: timer to 11; 2 at 8 joins.
        const source = cold('-1----0-2-----|', batches('012'));
        const result = '     -----------a--|';
        expectObservable(
          source.pipe(
            commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 5, every: NEVER_BY_COUNT }),
          ),
        ).toBe(result, { a: commit('3') });
      });
    });

    it('starts a new window after each commit', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        const source = cold('0-1------2---3|', batches('0123'));
        const result = '     ---a--------b-(c|)';
        expectObservable(
          source.pipe(
            commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 3, every: NEVER_BY_COUNT }),
          ),
        ).toBe(result, { a: commit('2'), b: commit('3'), c: commit('4') });
      });
    });
  });

  describe('batching by every', () => {
    it('commits at once when `every` records became committable', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3, 4, 5, 6);
        const source = cold('0-1-2-3-4-5-|', batches('012345'));
        const result = '     ----a-----b-|';
        expectObservable(
          source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 100, every: 3 })),
        ).toBe(result, { a: commit('3'), b: commit('6') });
      });
    });

    it('counts every record one completion passes', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        const source = cold('-2-1-0----|', batches('012'));
        const result = '     -----a----|';
        expectObservable(
          source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 100, every: 3 })),
        ).toBe(result, { a: commit('3') });
      });
    });

    it('counts the records of one batch together', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        const source = cold('-x---|', { x: [done(2), done(0), done(1)] });
        expectObservable(
          source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 100, every: 3 })),
        ).toBe('-a---|', { a: commit('3') });
      });
    });

    it('cancels the running timer when `every` commits, and the next move starts a fresh one', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        // 0 at 0 starts a timer for 5; 1 at 2 reaches every = 2: commit, cancel it;
        // 2 at 4 starts a timer for 9 (an old timer would commit at 5).
        const source = cold('0-1-2-----|', batches('012'));
        const result = '     --a------b|';
        expectObservable(
          source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 5, every: 2 })),
        ).toBe(result, { a: commit('2'), b: commit('3') });
      });
    });
  });

  describe('committing early when the partition goes quiet', () => {
    const QUIET = { ms: 2, records: 2 };
    /** commitInOrder with QUIET, a count never reached, and the sink given (default: answers at once). */
    const quietly = (
      tracker: OffsetTracker<OutRecord>,
      intervalMs: number,
      sink = new InMemoryCommitSink(),
    ) => commitInOrder(tracker, sink, { intervalMs, every: 100, quiet: QUIET });

    it('behaves as its marble diagram: commits quiet.ms after the last record, not at the interval', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        const source = cold('--0--1-2--------|', batches('012'));
        const result = '     ---------c------|';
        expectObservable(source.pipe(quietly(tracker, 9))).toBe(result, { c: commit('3') });
      });
    });

    it('keeps to the interval while fewer than quiet.records are committable (a trickle)', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0);
        // 0 alone at 1: all taken in is done, but one record is not a burst: the interval (1 + 5).
        const source = cold('-0--------|', batches('0'));
        expectObservable(source.pipe(quietly(tracker, 5))).toBe('------a---|', { a: commit('1') });
      });
    });

    it('keeps to the interval while a record taken in is not done', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        // 0 and 1 done at 1 (two committable), 2 still out until 9: the interval ends at 6.
        const source = cold('-x-------2|', { x: [done(0), done(1)], 2: [done(2)] });
        expectObservable(source.pipe(quietly(tracker, 5))).toBe('------a---(b|)', {
          a: commit('2'),
          b: commit('3'),
        });
      });
    });

    it('does not commit early when the intake took a record in during the quiet wait', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1);
        // 0 and 1 done at 1: the quiet wait would end at 3, but offset 2 comes in at 2.
        ts.schedule(() => tracker.register('2'), 2);
        const source = cold('-x------|', { x: [done(0), done(1)] });
        expectObservable(source.pipe(quietly(tracker, 5))).toBe('------a-|', { a: commit('2') });
      });
    });

    it('after a slow commit, waits only quiet.ms for what finished meanwhile', () => {
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1);
        const sink = new InMemoryCommitSink({ latencyMs: 4 });
        // 0 and 1 at 0: quiet, commit '2' at 2, durable at 6. 2 and 3 come in at 3 and finish
        // at 4 while it is out: at 6 the quiet wait starts again, to 8 (the interval: 26).
        ts.schedule(() => {
          tracker.register('2');
          tracker.register('3');
        }, 3);
        const source = cold('x---y----------|', { x: [done(0), done(1)], y: [done(2), done(3)] });
        expectObservable(source.pipe(quietly(tracker, 20, sink))).toBe('------a-----b--|', {
          a: commit('2'),
          b: commit('4'),
        });
      });
    });

    it('is off when quiet.ms is not shorter than the interval', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1);
        const source = cold('x-------|', { x: [done(0), done(1)] });
        expectObservable(
          source.pipe(
            commitInOrder(tracker, new InMemoryCommitSink(), {
              intervalMs: 5,
              every: 100,
              quiet: { ms: 5, records: 1 },
            }),
          ),
        ).toBe('-----a--|', { a: commit('2') });
      });
    });
  });

  it('holds the commit back behind an unfinished record however long, then passes the whole run', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2, 3);
      const source = cold('-1-2-3 20ms 0---|', batches('0123'));
      const result = '     28ms a-|';
      expectObservable(
        source.pipe(
          commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 2, every: NEVER_BY_COUNT }),
        ),
      ).toBe(result, { a: commit('4') });
    });
  });

  it('commits nothing for completions that do not move the offset, even with every = 1', () => {
    const sink = new InMemoryCommitSink();
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2, 3);
      const source = cold('-3-2-1|', batches('123'));
      expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 1, every: 1 }))).toBe(
        '------|',
      );
    });
    expect(sink.requests).toEqual([]);
  });

  it('commits past gaps in the offsets: registered 0, 1, 3, 4 done commits 5', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 3, 4);
      const source = cold('0123|', batches('0123'));
      expectObservable(
        source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 100, every: 100 })),
      ).toBe('----(a|)', { a: commit('5') });
    });
  });

  it('flushes what is committable when the source completes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2);
      const source = cold('0-1|', batches('01'));
      expectObservable(
        source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 100, every: 100 })),
      ).toBe('---(a|)', { a: commit('2') });
    });
  });

  it('completes at once when the source completes with nothing committable', () => {
    const sink = new InMemoryCommitSink();
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1);
      const source = cold<Done[]>('--|');
      expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 1, every: 1 }))).toBe('--|');
    });
    expect(sink.requests).toEqual([]);
  });

  it('does not repeat a commit at completion when nothing moved since', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1);
      const source = cold('0-----1|', batches('01'));
      expectObservable(
        source.pipe(commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 1, every: 100 })),
      ).toBe('-a-----(b|)', { a: commit('1'), b: commit('2') });
    });
    const sink = new InMemoryCommitSink();
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0);
      const source = cold('0-----|', batches('0'));
      expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 1, every: 100 }))).toBe(
        '-a----|',
        {
          a: commit('1'),
        },
      );
    });
    expect(sink.requests).toEqual(['1']);
  });

  it('publishes payloads with the commit that passes their offset, in offset order', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 3, 4);
      // seq 1 and 3 finish first; 3 finishes before commit a, but 2 is not done yet.
      const source = cold(
        '1--03----2--|',
        batches('0123', { 0: ['t0'], 1: ['t1', 'dlq1'], 2: ['t3'], 3: ['dlq4'] }),
      );
      const result = '     -----a-----b|';
      expectObservable(
        source.pipe(
          commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 2, every: NEVER_BY_COUNT }),
        ),
      ).toBe(result, { a: commit('2', 't0', 't1', 'dlq1'), b: commit('5', 't3', 'dlq4') });
    });
  });

  describe('one commit in flight at a time', () => {
    it('coalesces what becomes committable while a slow commit is in flight into one commit after it', () => {
      const tracker = registered(0, 1, 2, 3, 4, 5);
      let sink!: InMemoryCommitSink;
      testScheduler().run(({ cold, expectObservable }) => {
        // The sink answers 5 frames after each call; every = 1 would commit each record alone.
        sink = new InMemoryCommitSink({ latencyMs: 5 });
        const source = cold('012---3-----|', batches('0123', { 1: ['t1'], 2: ['t2'] }));
        // 0 at 0: commit '1', durable at 5. 1 and 2 wait behind it and go out together at 5,
        // durable at 10; 3 (at 6) waits, goes out at 10, durable at 15, then the result completes.
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 100, every: 1 }))).toBe(
          '-----a----b----(c|)',
          { a: commit('1'), b: commit('3', 't1', 't2'), c: commit('4') },
        );
      });
      expect(sink.requests).toEqual(['1', '3', '4']);
      expect(sink.maxInFlight).toBe(1);
    });

    it('counts records as unfinished until their commit is durable, and only then lets them go', () => {
      const tracker = registered(0, 1, 2, 3);
      const seen: [number, number, number][] = [];
      const ts = testScheduler();
      ts.run(({ cold, expectObservable }) => {
        const sink = new InMemoryCommitSink({ latencyMs: 10 });
        const source = cold('01-2-----------3|', batches('0123'));
        for (const at of [2, 4, 9, 11, 16, 21, 31]) {
          ts.schedule(() => seen.push([at, tracker.pending, tracker.unfinished]), at);
        }
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 100, every: 1 }))).toBe(
          '10ms a 9ms b 9ms (c|)',
          { a: commit('1'), b: commit('3'), c: commit('4') },
        );
      });
      expect(seen).toEqual([
        // [time, pending, unfinished]: pending drops as records finish, unfinished only when durable.
        [2, 2, 4],
        [4, 1, 4],
        [9, 1, 4],
        [11, 1, 3],
        [16, 0, 3],
        [21, 0, 1],
        [31, 0, 0],
      ]);
    });

    it('after a slow commit, arms the interval for what finished meanwhile (below `every`)', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        const sink = new InMemoryCommitSink({ latencyMs: 4 });
        // 0 at 0 starts the timer (3); commit '1' at 3, durable at 7. 1 at 4 waits: at 7 the
        // timer is armed for 10; commit '2' at 10, durable at 14. 2 at 12 waits; the source
        // completes at 15: commit '3', durable at 19, then the result completes.
        const source = cold('0---1-------2--|', batches('012'));
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 3, every: 100 }))).toBe(
          '-------a------b----(c|)',
          { a: commit('1'), b: commit('2'), c: commit('3') },
        );
      });
    });

    it('at completion waits for the commit in flight, then commits the rest, and completes when that is durable', () => {
      let sink!: InMemoryCommitSink;
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1);
        sink = new InMemoryCommitSink({ latencyMs: 6 });
        const source = cold('0-1|', batches('01'));
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 100, every: 1 }))).toBe(
          '------a-----(b|)',
          { a: commit('1'), b: commit('2') },
        );
      });
      expect(sink.commits.map((c) => c.offset)).toEqual(['1', '2']);
    });
  });

  describe('failures', () => {
    it('propagates a source error without committing what was pending', () => {
      const sink = new InMemoryCommitSink();
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        const error = new Error('index failed');
        const source = cold('0-#', batches('0'), error);
        // Without the error, 0 would be committed at 5 or at completion.
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 5, every: 100 }))).toBe(
          '--#',
          undefined,
          error,
        );
      });
      expect(sink.requests).toEqual([]);
    });

    it('errors, without committing, when a record is completed that was never registered', () => {
      const sink = new InMemoryCommitSink();
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        const source = cold('0-9---|', batches('09'));
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 5, every: 100 }))).toBe(
          '--#',
          undefined,
          expect.objectContaining({ message: expect.stringContaining('#9') }),
        );
      });
      expect(sink.requests).toEqual([]);
    });

    it('errors, without committing more, when the sink fails; the records stay unfinished', () => {
      const tracker = registered(0, 1, 2);
      const sink = new InMemoryCommitSink();
      const failure = new Error('transaction aborted');
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('0-1-2---|', batches('012'));
        expectObservable(
          source.pipe(
            commitInOrder(
              tracker,
              {
                commit: (offset, records) =>
                  offset === '2' ? throwError(() => failure) : sink.commit(offset, records),
              },
              { intervalMs: 100, every: 1 },
            ),
          ),
        ).toBe('a-#', { a: commit('1') }, failure);
      });
      expect(sink.commits.map((c) => c.offset)).toEqual(['1']);
      expect(tracker.unfinished).toBe(2);
    });

    it('errors when a slow sink fails after a while, and never sends the next commit', () => {
      const tracker = registered(0, 1);
      const sink = new InMemoryCommitSink({ latencyMs: 3 });
      const failure = new Error('coordinator gone');
      sink.failNext(failure);
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('01----|', batches('01'));
        expectObservable(source.pipe(commitInOrder(tracker, sink, { intervalMs: 100, every: 1 }))).toBe(
          '---#',
          undefined,
          failure,
        );
      });
      expect(sink.requests).toEqual(['1']);
      expect(sink.commits).toEqual([]);
      expect(tracker.unfinished).toBe(2);
    });

    it('errors when the sink answers nothing (a commit must say it is durable)', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0);
        const silent: CommitSink = { commit: () => EMPTY };
        expectObservable(
          cold('0--|', batches('0')).pipe(commitInOrder(tracker, silent, { intervalMs: 1, every: 1 })),
        ).toBe(
          '#',
          undefined,
          expect.objectContaining({ message: expect.stringContaining('answered nothing') }),
        );
      });
    });

    it('errors the result when the sink throws instead of answering', async () => {
      const failure = new Error('producer closed');
      const throwing: CommitSink = {
        commit: () => {
          throw failure;
        },
      };
      const errors: unknown[] = [];
      const unhandled = await unhandledErrorsOf(() => {
        const source = new Subject<Done[]>();
        source
          .pipe(commitInOrder(registered(0, 1), throwing, { intervalMs: 100, every: 1 }))
          .subscribe({ error: (err) => errors.push(err) });
        source.next([done(0)]);
      });
      expect(errors).toEqual([failure]);
      expect(unhandled).toEqual([]);
    });
  });

  it('cancels the timer and the commit in flight, and leaves the source, when unsubscribed', () => {
    const virtual = new VirtualTimeScheduler();
    const timers: Subscription[] = [];
    const scheduler: SchedulerLike = {
      now: () => virtual.now(),
      schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T) {
        const s = virtual.schedule(work, delay, state);
        timers.push(s);
        return s;
      },
    };
    const tracker = registered(0, 1);
    const source = new Subject<Done[]>();
    const sink = new InMemoryCommitSink({ latencyMs: 50, scheduler: virtual });
    const emitted: Commit[] = [];
    const sub = source
      .pipe(commitInOrder(tracker, sink, { intervalMs: 10, every: 100, scheduler }))
      .subscribe((c) => emitted.push(c));

    source.next([done(0, 'p0')]);
    expect(timers).toHaveLength(1);
    expect(timers[0]!.closed).toBe(false);

    sub.unsubscribe();
    expect(timers[0]!.closed).toBe(true);
    expect(virtual.actions).toHaveLength(0);
    expect(source.observed).toBe(false);
    virtual.flush();
    expect(emitted).toEqual([]);
    expect(sink.requests).toEqual([]);

    // A commit in flight is dropped too: nothing is emitted for it after unsubscribing.
    const t2 = registered(0);
    const s2 = new Subject<Done[]>();
    const sub2 = s2
      .pipe(commitInOrder(t2, sink, { intervalMs: 10, every: 1, scheduler }))
      .subscribe((c) => emitted.push(c));
    s2.next([done(0)]);
    expect(sink.requests).toEqual(['1']);
    sub2.unsubscribe();
    virtual.flush();
    expect(emitted).toEqual([]);
    expect(t2.unfinished).toBe(1);
  });

  it('emits durable commits that a caller can map (the offsets only)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(10, 11);
      const source = cold('01|', batches('01'));
      expectObservable(
        source.pipe(
          commitInOrder(tracker, new InMemoryCommitSink(), { intervalMs: 100, every: 2 }),
          map((c) => c.offset),
        ),
      ).toBe('-a|', { a: '12' });
    });
  });
});
