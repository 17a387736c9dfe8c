import { Subject, VirtualTimeScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { createWindowedIdSet } from '../../../src/model/windowed-id-set.js';
import { createWindowedSeenSet, distinctWithin } from '../../../src/operators/distinct-within.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const identity = (v: string) => v;

describe('distinctWithin', () => {
  it('behaves as its marble diagram: drops a key inside its window, admits it again at the boundary', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const duplicates = new Subject<string>();
      const source = cold('-a--a-a--ba---b-|');
      const result = '     -a----a--b----b-|';
      const duplicate = '  ----a-----a------';

      expectObservable(
        source.pipe(distinctWithin(identity, 5, { onDuplicate: (v) => duplicates.next(v) })),
      ).toBe(result);
      expectObservable(duplicates).toBe(duplicate);
    });
  });

  it('drops every copy inside the window, whatever the gap between copies', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // The window starts at the emitted value, not at the last copy: copies do not extend it.
      const source = cold('a-a-a-a-a-a-|');
      const result = '     a-----a-----|';
      expectObservable(source.pipe(distinctWithin(identity, 6))).toBe(result);
    });
  });

  it('admits a key again once its window has passed, however long after', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a 20ms a 3ms a|');
      const result = '     a 20ms a 3ms -|';
      expectObservable(source.pipe(distinctWithin(identity, 10))).toBe(result);
    });
  });

  it('uses the key, not the value, and keeps keys independent', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const values = { a: { id: 1, n: 'a' }, b: { id: 1, n: 'b' }, c: { id: 2, n: 'c' } };
      const source = cold('abc|', values);
      const result = '     a-c|';
      expectObservable(source.pipe(distinctWithin((v) => v.id, 10))).toBe(result, values);
    });
  });

  it('calls onDuplicate synchronously with the dropped value itself', () => {
    const source = new Subject<{ id: number }>();
    const dropped: { id: number }[] = [];
    const emitted: { id: number }[] = [];
    const scheduler = new VirtualTimeScheduler();
    source
      .pipe(distinctWithin((v) => v.id, 10, { onDuplicate: (v) => dropped.push(v), scheduler }))
      .subscribe((v) => emitted.push(v));

    const first = { id: 7 };
    const copy = { id: 7 };
    source.next(first);
    source.next(copy);
    // Nothing was flushed: the callback ran inside next().
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toBe(copy);
    expect(emitted).toEqual([first]);
    expect(emitted[0]).toBe(first);
  });

  it('passes errors through', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-a-#', undefined, new Error('boom'));
      const result = '     -a---#';
      expectObservable(source.pipe(distinctWithin(identity, 10))).toBe(result, undefined, new Error('boom'));
    });
  });

  it('passes completion through, also for an empty source', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('--|').pipe(distinctWithin(identity, 10))).toBe('--|');
      expectObservable(cold('a|').pipe(distinctWithin(identity, 10))).toBe('a|');
    });
  });

  it('errors the result when keyOf or onDuplicate throws', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const boom = new Error('boom');
      const throwingKey = (v: string) => {
        if (v === 'b') throw boom;
        return v;
      };
      expectObservable(cold('ab-c|').pipe(distinctWithin(throwingKey, 10))).toBe('a#', undefined, boom);
      expectObservable(
        cold('aa-c|').pipe(
          distinctWithin(identity, 10, {
            onDuplicate: () => {
              throw boom;
            },
          }),
        ),
      ).toBe('a#', undefined, boom);
    });
  });

  it('keeps a separate window per subscription', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const shared = cold('a-a|').pipe(distinctWithin(identity, 10));
      expectObservable(shared).toBe('a--|');
      expectObservable(shared, '-^').toBe('-a--|');
    });
  });

  it('runs a single sweep timer while keys are held, none once they expired, and cancels it on teardown', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<string>();
    const sub = source.pipe(distinctWithin(identity, 10, { scheduler })).subscribe();

    expect(scheduler.actions).toHaveLength(0);
    source.next('a');
    source.next('b');
    source.next('c');
    expect(scheduler.actions).toHaveLength(1);
    expect(scheduler.actions[0]?.delay).toBe(10);

    scheduler.flush();
    expect(scheduler.frame).toBe(10);
    expect(scheduler.actions).toHaveLength(0);

    source.next('a');
    expect(scheduler.actions).toHaveLength(1);
    sub.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
  });

  it('cancels the sweep timer when the source completes', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<string>();
    source.pipe(distinctWithin(identity, 10, { scheduler })).subscribe();
    source.next('a');
    expect(scheduler.actions).toHaveLength(1);
    source.complete();
    expect(scheduler.actions).toHaveLength(0);
  });

  it('rejects a window that is not a finite number > 0', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => distinctWithin(identity, bad)).toThrow(RangeError);
      expect(() => distinctWithin(identity, bad)).toThrow(/windowMs/);
      expect(() => createWindowedSeenSet(bad, () => 0)).toThrow(RangeError);
    }
  });
});

// The dedup window's two sets share one contract: the Set of any keys, and the one for
// message ids kept off the V8 heap (windowed-id-set.test.ts has its own cases on top).
describe.each([
  ['createWindowedSeenSet', (w: number, now: () => number) => createWindowedSeenSet<string>(w, now)],
  ['createWindowedIdSet', createWindowedIdSet],
] as const)('%s, the window contract', (_name, create) => {
  it('admits a key once per window, half-open at the end', () => {
    let t = 100;
    const seen = create(10, () => t);
    expect(seen.admit('k')).toBe(true);
    t = 109;
    expect(seen.admit('k')).toBe(false);
    t = 110;
    expect(seen.admit('k')).toBe(true);
    t = 119;
    expect(seen.admit('k')).toBe(false);
  });
  it('forgets expired keys (a key re-sent after expiry passes), keeps the others', () => {
    let t = 0;
    const seen = create(10, () => t);
    seen.admit('old');
    t = 5;
    seen.admit('young');
    expect(seen.emptyAt).toBe(15);
    t = 10;
    seen.evictExpired();
    expect(seen.size).toBe(1);
    expect(seen.admit('young')).toBe(false);
    expect(seen.admit('old')).toBe(true);
    expect(seen.emptyAt).toBe(20);
  });
  it('clear() forgets everything', () => {
    const seen = create(10, () => 0);
    seen.admit('a');
    seen.clear();
    expect(seen.size).toBe(0);
    expect(seen.admit('a')).toBe(true);
  });
});

describe('createWindowedSeenSet', () => {
  it('keeps its size bounded by one window over 100k distinct keys', () => {
    let t = 0;
    const seen = createWindowedSeenSet<number>(10, () => t);
    let maxSize = 0;
    let admitted = 0;
    for (let i = 0; i < 100_000; i++) {
      t = i * 0.5; // two keys per ms: a 10 ms window holds 20 of them
      if (seen.admit(i)) admitted++;
      maxSize = Math.max(maxSize, seen.size);
    }
    expect(admitted).toBe(100_000);
    expect(maxSize).toBe(20);

    t += 10;
    seen.evictExpired();
    expect(seen.size).toBe(0);
    expect(seen.emptyAt).toBeUndefined();
  });

  it('stays correct across queue compactions', () => {
    let t = 0;
    const seen = createWindowedSeenSet<number>(3000, () => t);
    // A window of 3000 values: the head passes the compaction threshold with keys still held.
    const wrong: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      t = i;
      const ok = seen.admit(i) && !(i >= 2999 && seen.admit(i - 2999)) && seen.size === Math.min(i + 1, 3000);
      if (!ok) wrong.push(i);
    }
    expect(wrong).toEqual([]);
    t = 10_000;
    expect(seen.admit(7000)).toBe(true);
    expect(seen.admit(7001)).toBe(false);
  });
});
