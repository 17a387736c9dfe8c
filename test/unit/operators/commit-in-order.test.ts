import {
  type SchedulerAction,
  type SchedulerLike,
  Subject,
  type Subscription,
  VirtualTimeScheduler,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import type { Completion } from '../../../src/model/outcome.js';
import { type CommitRequest, commitInOrder } from '../../../src/operators/commit-in-order.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const NEVER_BY_COUNT = Number.POSITIVE_INFINITY;

/** A tracker with these offsets registered, as the intake would have done. */
const registered = (...offsets: number[]) => {
  const t = new OffsetTracker<string>();
  for (const o of offsets) t.register(String(o));
  return t;
};

/** Completion marbles: the character is the offset; `payloads` optionally per offset. */
const completions = (offsets: string, payloads: Record<string, string[]> = {}) =>
  Object.fromEntries(
    [...offsets].map((o): [string, Completion<string>] => [o, { offset: o, payloads: payloads[o] ?? [] }]),
  );

const req = (offset: string, ...payloads: string[]): CommitRequest<string> => ({ offset, payloads });

describe('commitInOrder', () => {
  it('behaves as its marble diagram', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2, 3);
      const source = cold('--2--0-1---3|', completions('0123'));
      const result = '     --------a---(b|)';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 3, every: NEVER_BY_COUNT }))).toBe(
        result,
        { a: req('3'), b: req('4') },
      );
    });
  });

  describe('batching by intervalMs', () => {
    it('starts the timer when the committable offset first moves, not at the first completion', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2);
        // 1 completes at 1 (offset does not move); 0 at 6 moves it: timer to 11; 2 at 8 joins.
        const source = cold('-1----0-2-----|', completions('012'));
        const result = '     -----------a--|';
        expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 5, every: NEVER_BY_COUNT }))).toBe(
          result,
          { a: req('3') },
        );
      });
    });

    it('starts a new window after each request', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        const source = cold('0-1------2---3|', completions('0123'));
        const result = '     ---a--------b-(c|)';
        expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 3, every: NEVER_BY_COUNT }))).toBe(
          result,
          { a: req('2'), b: req('3'), c: req('4') },
        );
      });
    });
  });

  describe('batching by every', () => {
    it('emits at once when `every` records became committable', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3, 4, 5, 6);
        const source = cold('0-1-2-3-4-5-|', completions('012345'));
        const result = '     ----a-----b-|';
        expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 100, every: 3 }))).toBe(result, {
          a: req('3'),
          b: req('6'),
        });
      });
    });

    it('counts every record one completion passes', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        const source = cold('-2-1-0----|', completions('012'));
        const result = '     -----a----|';
        expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 100, every: 3 }))).toBe(result, {
          a: req('3'),
        });
      });
    });

    it('cancels the running timer when `every` emits, and the next move starts a fresh one', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const tracker = registered(0, 1, 2, 3);
        // 0 at 0 starts a timer for 5; 1 at 2 reaches every = 2: emit, cancel it;
        // 2 at 4 starts a timer for 9 (an old timer would emit at 5).
        const source = cold('0-1-2-----|', completions('012'));
        const result = '     --a------b|';
        expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 5, every: 2 }))).toBe(result, {
          a: req('2'),
          b: req('3'),
        });
      });
    });
  });

  it('holds the commit back behind a gap however long, then passes the whole run', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2, 3);
      const source = cold('-1-2-3 20ms 0---|', completions('0123'));
      const result = '     28ms a-|';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 2, every: NEVER_BY_COUNT }))).toBe(
        result,
        { a: req('4') },
      );
    });
  });

  it('emits nothing for completions that do not move the offset, even with every = 1', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2, 3);
      const source = cold('-3-2-1|', completions('123'));
      const result = '     ------|';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 1, every: 1 }))).toBe(result);
    });
  });

  it('flushes what is committable when the source completes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2);
      const source = cold('0-1|', completions('01'));
      const result = '     ---(a|)';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 100, every: 100 }))).toBe(result, {
        a: req('2'),
      });
    });
  });

  it('does not repeat a request at completion when nothing moved since', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1);
      const source = cold('0-----1|', completions('01'));
      const result = '     -a-----(b|)';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 1, every: 100 }))).toBe(result, {
        a: req('1'),
        b: req('2'),
      });
    });
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0);
      const source = cold('0-----|', completions('0'));
      const result = '     -a----|';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 1, every: 100 }))).toBe(result, {
        a: req('1'),
      });
    });
  });

  it('propagates a source error without committing what was pending', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2);
      const error = new Error('index failed');
      const source = cold('0-#', completions('0'), error);
      // Without the error, 0 would be committed at 5 or at completion.
      const result = '     --#';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 5, every: 100 }))).toBe(
        result,
        undefined,
        error,
      );
    });
  });

  it('errors, without committing, when a completion is for an offset never registered', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 2);
      const source = cold('0-9---|', completions('09'));
      const result = '     --#';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 5, every: 100 }))).toBe(
        result,
        undefined,
        expect.objectContaining({ message: expect.stringContaining('9') }),
      );
    });
  });

  it('publishes payloads with the request that passes their offset, in offset order', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const tracker = registered(0, 1, 3, 4);
      // 1 and 4 complete first; 4 completes before request a but 3 is not done yet.
      const source = cold(
        '1--04----3--|',
        completions('0134', { 0: ['t0'], 1: ['t1', 'dlq1'], 3: ['t3'], 4: ['dlq4'] }),
      );
      const result = '     -----a-----b|';
      expectObservable(source.pipe(commitInOrder(tracker, { intervalMs: 2, every: NEVER_BY_COUNT }))).toBe(
        result,
        { a: req('2', 't0', 't1', 'dlq1'), b: req('5', 't3', 'dlq4') },
      );
    });
  });

  it('cancels the timer, and leaves the source, when unsubscribed', () => {
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
    const source = new Subject<Completion<string>>();
    const emitted: CommitRequest<string>[] = [];
    const sub = source
      .pipe(commitInOrder(tracker, { intervalMs: 10, every: 100, scheduler }))
      .subscribe((r) => emitted.push(r));

    source.next({ offset: '0', payloads: ['p0'] });
    expect(timers).toHaveLength(1);
    expect(timers[0]!.closed).toBe(false);

    sub.unsubscribe();
    expect(timers[0]!.closed).toBe(true);
    expect(virtual.actions).toHaveLength(0);
    expect(source.observed).toBe(false);
    virtual.flush();
    expect(emitted).toEqual([]);
  });
});
