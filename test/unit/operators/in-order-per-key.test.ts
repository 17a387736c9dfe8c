import { map, type Observable, of, Subject, timer, VirtualTimeScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { inOrderPerKey } from '../../../src/operators/in-order-per-key.js';
import { unhandledErrorsOf } from '../support/unhandled-errors.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** A value of the tests: `ms` is how long its work takes, `name` what the work yields. */
interface Job {
  key: number;
  ms: number;
  name: string;
}
const job = (name: string, key: number, ms: number): Job => ({ key, ms, name });
const keyOf = (j: Job) => j.key;
const work = (j: Job): Observable<string> => timer(j.ms).pipe(map(() => j.name));
const names = (s: string) => Object.fromEntries([...s].map((c) => [c, c]));

describe('inOrderPerKey', () => {
  it('behaves as its marble diagram', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const jobs = { a: job('a', 1, 4), b: job('b', 2, 1), c: job('c', 1, 1), d: job('d', 1, 1) };
      const groups = new Subject<number>();
      const source = cold('-ab-c---------d---|', jobs);
      const result = '     ---b-ac--------d--|';
      const openGroups = ' -12---1--0----1---0';

      const out = source.pipe(
        inOrderPerKey(keyOf, work, { idleCloseMs: 3, onGroupsChanged: (n) => groups.next(n) }),
      );
      expectObservable(out).toBe(result, names('abcd'));
      expectObservable(groups).toBe(openGroups, { 0: 0, 1: 1, 2: 2 });
    });
  });

  it('keeps arrival order within a key even when later work is faster', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Each job alone would finish in reverse order: e at 5, d at 6, c at 7, b at 8, a at 9.
      const jobs = {
        a: job('a', 1, 9),
        b: job('b', 1, 7),
        c: job('c', 1, 5),
        d: job('d', 1, 3),
        e: job('e', 1, 1),
      };
      const source = cold('abcde|', jobs);
      const result = '     9ms a 6ms b 4ms c 2ms d (e|)';
      expectObservable(source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 5 }))).toBe(
        result,
        names('abcde'),
      );
    });
  });

  it('runs the work of different keys concurrently', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Serialised they would finish at 10, 20 and 30; overlapping, each 10 ms after it arrived.
      const jobs = { a: job('a', 1, 10), b: job('b', 2, 10), c: job('c', 3, 10) };
      const source = cold('abc|', jobs);
      const result = '     10ms a b (c|)';
      expectObservable(source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 5 }))).toBe(
        result,
        names('abc'),
      );
    });
  });

  it('closes an idle group and keeps order in the group that reopens the key', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const jobs = { a: job('a', 1, 2), b: job('b', 1, 3), c: job('c', 1, 1), d: job('d', 1, 1) };
      const groups = new Subject<number>();
      // a's work ends at 2, the group closes at 4; b, c, d land in a new group for key 1.
      const source = cold('a----bcd---|', jobs);
      const result = '     --a-----bcd|';
      const openGroups = ' 1---01-----0';
      expectObservable(
        source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 2, onGroupsChanged: (n) => groups.next(n) })),
      ).toBe(result, names('abcd'));
      expectObservable(groups).toBe(openGroups, { 0: 0, 1: 1 });
    });
  });

  it('does not close a group while its work is in flight, so a later value still waits behind it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const jobs = { a: job('a', 1, 10), b: job('b', 1, 1) };
      const groups = new Subject<number>();
      // No value for 5 ms, but a is in flight: a group closed at 2 would let b run at 5 and
      // overtake a. The group holds until 2 ms after b's work ends.
      const source = cold('a----b----------|', jobs);
      const result = '     10ms a b----|';
      const openGroups = ' 1 12ms 0';
      expectObservable(
        source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 2, onGroupsChanged: (n) => groups.next(n) })),
      ).toBe(result, names('ab'));
      expectObservable(groups).toBe(openGroups, { 0: 0, 1: 1 });
    });
  });

  it('drops the open-group count back to 0 after idle, with a source that never completes', () => {
    testScheduler().run(({ hot, expectObservable }) => {
      const jobs = { a: job('a', 1, 1), b: job('b', 2, 1), c: job('c', 3, 1) };
      const groups = new Subject<number>();
      const source = hot('-abc-------------', jobs);
      const unsub = '     ^ 30ms !';
      const openGroups = ' -123-210';
      expectObservable(
        source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 3, onGroupsChanged: (n) => groups.next(n) })),
        unsub,
      ).toBe('--abc', names('abc'));
      expectObservable(groups).toBe(openGroups, { 0: 0, 1: 1, 2: 2, 3: 3 });
    });
  });

  it('propagates an error from work and cancels the work of the other keys', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const boom = new Error('boom');
      const slow = cold('-----s|');
      const failing = cold('--#', undefined, boom);
      const source = cold('ab--c|');
      const workOf = (v: string) => (v === 'a' ? slow : v === 'b' ? failing : of(v));
      expectObservable(source.pipe(inOrderPerKey((v) => v, workOf, { idleCloseMs: 5 }))).toBe(
        '---#',
        undefined,
        boom,
      );
      expectSubscriptions(slow.subscriptions).toBe('^--!');
      expectSubscriptions(failing.subscriptions).toBe('-^-!');
    });
  });

  it('propagates a source error', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const boom = new Error('boom');
      const source = cold('a-#', { a: job('a', 1, 5) }, boom);
      expectObservable(source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 5 }))).toBe(
        '--#',
        undefined,
        boom,
      );
    });
  });

  it('on completion, finishes all queued and in-flight work of every key before completing', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // The source completes at 4 while key 1 still has b and c queued behind a: groupBy completes
      // the group, yet concatMap drains what it holds.
      const jobs = { a: job('a', 1, 3), b: job('b', 1, 3), c: job('c', 1, 3), x: job('x', 2, 8) };
      const source = cold('abcx|', jobs);
      const result = '     ---a--b--c-(x|)';
      expectObservable(source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 1 }))).toBe(
        result,
        names('abcx'),
      );
    });
  });

  it('handles synchronous work', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a-----b-----(a|)');
      const result = '     (aa)--(bb)--(aa|)';
      expectObservable(
        source.pipe(
          inOrderPerKey(
            (v) => v,
            (v) => of(v, v),
            { idleCloseMs: 1 },
          ),
        ),
      ).toBe(result);
    });
  });

  it('does not close a group whose finished work has more work queued behind it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const jobs = { a: job('a', 1, 2), b: job('b', 1, 8), c: job('c', 1, 1) };
      // a ends at 2 with b queued; b runs until 10. A group closed at 4 would let c run at 5.
      const source = cold('ab---c|', jobs);
      const result = '     --a-------b(c|)';
      expectObservable(source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 2 }))).toBe(
        result,
        names('abc'),
      );
    });
  });

  it('cancels a pending idle close when a new value for the key arrives', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const jobs = { a: job('a', 1, 1), b: job('b', 1, 5), c: job('c', 1, 1) };
      const groups = new Subject<number>();
      // a ends at 1 and arms the close for 3; b arrives at 2. Had the close still fired at 3,
      // c at 4 would open a second group for key 1 and finish at 5, before b at 7.
      const source = cold('a-b-c----|', jobs);
      const result = '     -a-----bc|';
      const openGroups = ' 1--------0';
      expectObservable(
        source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 2, onGroupsChanged: (n) => groups.next(n) })),
      ).toBe(result, names('abc'));
      expectObservable(groups).toBe(openGroups, { 0: 0, 1: 1 });
    });
  });

  it('keeps order in a group that goes idle and wakes before it closes, its queue filled twice', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Key 1 queues b and c behind a, drains at 5 and is idle until d at 8 (it would close at
      // 15); d, e and f queue again in the same group, behind d's 3 ms of work.
      const jobs = {
        a: job('a', 1, 3),
        b: job('b', 1, 1),
        c: job('c', 1, 1),
        d: job('d', 1, 3),
        e: job('e', 1, 1),
        f: job('f', 1, 1),
      };
      const groups = new Subject<number>();
      const source = cold('abc-----def-----|', jobs);
      const result = '     ---abc-----def--|';
      const openGroups = ' 1---------------0';
      expectObservable(
        source.pipe(inOrderPerKey(keyOf, work, { idleCloseMs: 10, onGroupsChanged: (n) => groups.next(n) })),
      ).toBe(result, names('abcdef'));
      expectObservable(groups).toBe(openGroups, { 0: 0, 1: 1 });
    });
  });

  it('cancels idle timers and in-flight work on unsubscribe', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<Job>();
    const opened: number[] = [];
    const sub = source
      .pipe(
        inOrderPerKey(keyOf, (j) => timer(j.ms, scheduler).pipe(map(() => j.name)), {
          idleCloseMs: 5,
          scheduler,
          onGroupsChanged: (n) => opened.push(n),
        }),
      )
      .subscribe();
    source.next(job('a', 1, 0));
    source.next(job('b', 2, 100));
    scheduler.maxFrames = 1;
    scheduler.flush();
    // Key 1 is idle with its close timer armed; key 2's work is in flight.
    expect(scheduler.actions.map((a) => a.delay).sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([5, 100]);

    sub.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
    expect(source.observed).toBe(false);
    expect(opened.at(-1)).toBe(0);
  });

  describe('values without a key', () => {
    /** Key undefined for jobs whose key is 0: they belong to no group. */
    const keyOrNone = (j: Job) => (j.key === 0 ? undefined : j.key);

    it('runs their work at once, beside the lanes, and emits each result as soon as it is ready', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        // a (key 1) takes 5; x and y (no key) take 3 and 1: neither waits for a nor for each other.
        const jobs = { a: job('a', 1, 5), x: job('x', 0, 3), y: job('y', 0, 1), c: job('c', 1, 1) };
        const source = cold('axyc---|', jobs);
        // x 1→4, y 2→3, a 0→5, c queued behind a: 5→6.
        expectObservable(source.pipe(inOrderPerKey(keyOrNone, work, { idleCloseMs: 10 }))).toBe(
          '---yxac|',
          names('axyc'),
        );
      });
    });

    it('opens no group for them', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const groups = new Subject<number>();
        const source = cold('xy-|', { x: job('x', 0, 1), y: job('y', 0, 1) });
        expectObservable(
          source.pipe(
            inOrderPerKey(keyOrNone, work, { idleCloseMs: 2, onGroupsChanged: (n) => groups.next(n) }),
          ),
        ).toBe('-xy|', names('xy'));
        expectObservable(groups).toBe('');
      });
    });

    it('waits for their work in flight before completing', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('x|', { x: job('x', 0, 7) });
        expectObservable(source.pipe(inOrderPerKey(keyOrNone, work, { idleCloseMs: 2 }))).toBe(
          '7ms (x|)',
          names('x'),
        );
      });
    });

    it('emits array results at once', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('x 9ms y 3ms |', { x: job('x', 0, 0), y: job('y', 0, 0) });
        expectObservable(
          source.pipe(inOrderPerKey(keyOrNone, (j) => [j.name, j.name.toUpperCase()], { idleCloseMs: 2 })),
        ).toBe('(xX) 6ms (yY)|', { x: 'x', X: 'X', y: 'y', Y: 'Y' });
      });
    });

    it('handles work that answers synchronously with an observable (of), without an unhandled error', async () => {
      const out: string[] = [];
      let completed = false;
      const unhandled = await unhandledErrorsOf(() => {
        const source = new Subject<Job>();
        source.pipe(inOrderPerKey(keyOrNone, (j) => of(j.name), { idleCloseMs: 2 })).subscribe({
          next: (v) => out.push(v),
          complete: () => {
            completed = true;
          },
        });
        source.next(job('x', 0, 0));
        source.next(job('y', 0, 0));
        source.complete();
      });
      expect(unhandled).toEqual([]);
      expect(out).toEqual(['x', 'y']);
      expect(completed).toBe(true);
    });

    it('cancels their work in flight on unsubscribe', () => {
      const scheduler = new VirtualTimeScheduler();
      const source = new Subject<Job>();
      const out: string[] = [];
      const sub = source
        .pipe(
          inOrderPerKey(keyOrNone, (j) => timer(j.ms, scheduler).pipe(map(() => j.name)), {
            idleCloseMs: 5,
            scheduler,
          }),
        )
        .subscribe((v) => out.push(v));
      source.next(job('x', 0, 50));
      expect(scheduler.actions).toHaveLength(1);
      sub.unsubscribe();
      expect(scheduler.actions).toHaveLength(0);
      scheduler.flush();
      expect(out).toEqual([]);
    });

    it('propagates an error from their work', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const boom = new Error('boom');
        const source = cold('ax-|', { a: job('a', 1, 5), x: job('x', 0, 1) });
        const failing = (j: Job) =>
          j.key === 0
            ? timer(1).pipe(
                map(() => {
                  throw boom;
                }),
              )
            : work(j);
        expectObservable(source.pipe(inOrderPerKey(keyOrNone, failing, { idleCloseMs: 2 }))).toBe(
          '--#',
          undefined,
          boom,
        );
      });
    });
  });

  it('rejects an idleCloseMs that is not a finite number > 0', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => inOrderPerKey(keyOf, work, { idleCloseMs: bad })).toThrow(RangeError);
    }
  });
});
