import { Subject, VirtualTimeScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { rebatch } from '../../../src/operators/rebatch.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

describe('rebatch', () => {
  it('behaves as its marble diagram', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-abc---d--------ef-|');
      const result = '     ---x--------y------(z|)';
      expectObservable(source.pipe(rebatch(3, 5))).toBe(result, {
        x: ['a', 'b', 'c'],
        y: ['d'],
        z: ['e', 'f'],
      });
    });
  });

  it('closes a batch at maxSize values, at once', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('ab-cd-ef-|');
      const result = '     -x--y--z-|';
      expectObservable(source.pipe(rebatch(2, 100))).toBe(result, {
        x: ['a', 'b'],
        y: ['c', 'd'],
        z: ['e', 'f'],
      });
    });
  });

  it('closes a batch maxWaitMs after its first value, not after its last', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-b-c-d-e-f----|');
      const result = '     ------x-----y---|';
      expectObservable(source.pipe(rebatch(100, 5))).toBe(result, {
        x: ['a', 'b', 'c'],
        y: ['d', 'e', 'f'],
      });
    });
  });

  it('closes on whichever comes first, and a size-closed batch restarts the timer', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // a..c fill the batch at 3; d opens a new one whose timer runs from 4, not from 1.
      const source = cold('-abcd-e-------|');
      const result = '     ---x-----y----|';
      expectObservable(source.pipe(rebatch(3, 5))).toBe(result, {
        x: ['a', 'b', 'c'],
        y: ['d', 'e'],
      });
    });
  });

  it('emits each value alone at maxSize 1', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('ab-c|').pipe(rebatch(1, 5))).toBe('xy-z|', { x: ['a'], y: ['b'], z: ['c'] });
    });
  });

  it('flushes the partial batch on completion, then completes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-ab|');
      const result = '     ---(x|)';
      expectObservable(source.pipe(rebatch(10, 100))).toBe(result, { x: ['a', 'b'] });
    });
  });

  it('completes without a batch when nothing is pending', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-ab---|').pipe(rebatch(2, 100))).toBe('--x---|', { x: ['a', 'b'] });
      expectObservable(cold('---|').pipe(rebatch(2, 100))).toBe('---|');
    });
  });

  it('emits no empty batch during silence', () => {
    testScheduler().run(({ hot, expectObservable }) => {
      const source = hot('-a-----------------------------');
      const unsub = '     ^ 100ms !';
      const result = '    ------x-----------------------';
      expectObservable(source.pipe(rebatch(10, 5)), unsub).toBe(result, { x: ['a'] });
    });
  });

  it('schedules no timer while no batch is open', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<string>();
    const batches: string[][] = [];
    source.pipe(rebatch(10, 5, scheduler)).subscribe((b) => batches.push(b));

    expect(scheduler.actions).toHaveLength(0);
    source.next('a');
    expect(scheduler.actions).toHaveLength(1);
    scheduler.flush();
    expect(batches).toEqual([['a']]);
    expect(scheduler.actions).toHaveLength(0);
  });

  it('drops the partial batch and passes the error on', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const boom = new Error('boom');
      const source = cold('-ab-c-#', undefined, boom);
      const result = '     --x---#';
      expectObservable(source.pipe(rebatch(2, 100))).toBe(result, { x: ['a', 'b'] }, boom);
    });
  });

  it('cancels the timer of the open batch on error', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<string>();
    const batches: string[][] = [];
    let error: unknown;
    source
      .pipe(rebatch(10, 5, scheduler))
      .subscribe({ next: (b) => batches.push(b), error: (e) => (error = e) });
    source.next('a');
    source.error('boom');
    expect(error).toBe('boom');
    expect(scheduler.actions).toHaveLength(0);
    expect(batches).toEqual([]);
  });

  it('cancels the timer when unsubscribed', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<string>();
    const batches: string[][] = [];
    const sub = source.pipe(rebatch(10, 5, scheduler)).subscribe((b) => batches.push(b));
    source.next('a');
    expect(scheduler.actions).toHaveLength(1);

    sub.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
    expect(source.observed).toBe(false);
    scheduler.flush();
    expect(batches).toEqual([]);
  });

  it('starts a fresh batch for values the consumer feeds back synchronously', () => {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<number>();
    const batches: number[][] = [];
    source.pipe(rebatch(2, 5, scheduler)).subscribe((b) => {
      batches.push(b);
      if (b[0] === 1) source.next(3);
    });
    source.next(1);
    source.next(2);
    expect(batches).toEqual([[1, 2]]);
    scheduler.flush();
    expect(batches).toEqual([[1, 2], [3]]);
  });

  it('rejects a maxSize that is not an integer >= 1 and a maxWaitMs that is not finite > 0', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => rebatch(bad, 10)).toThrow(RangeError);
    }
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => rebatch(10, bad)).toThrow(RangeError);
    }
  });
});
