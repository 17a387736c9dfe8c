import { map, of, Subject, throwError, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { mergeMapWithBarriers } from '../../../src/operators/merge-map-with-barriers.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
const takes = (frames: number) => (v: string) => timer(frames).pipe(map(() => v));

describe('mergeMapWithBarriers', () => {
  it('behaves as its marble diagram', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-b-c-T-d-|');
      const result = '     -----a-b-c---T---(d|)';
      expectObservable(
        source.pipe(mergeMapWithBarriers(takes(4), { concurrency: 2, alone: (v) => v === 'T' })),
      ).toBe(result);
    });
  });

  it('joins values that wait, as its marble diagram shows', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('abcde|');
      const result = '     ---a--x--(y|)';
      const join = (w: string, v: string) => (w.length + v.length <= 2 ? w + v : undefined);
      expectObservable(
        source.pipe(mergeMapWithBarriers(takes(3), { concurrency: 1, alone: () => false, join })),
      ).toBe(result, { a: 'a', x: 'bc', y: 'de' });
    });
  });

  it('asks whether a joined value must run alone of the joined value', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // c waits behind a and b; T joins it: "cT" must run alone, so it waits for b too, and d
      // waits for it.
      const source = cold('abcT--d|');
      const result = '     ----ab---x---(d|)';
      const join = (w: string, v: string) => w + v;
      expectObservable(
        source.pipe(mergeMapWithBarriers(takes(4), { concurrency: 2, alone: (v) => v.includes('T'), join })),
      ).toBe(result, { a: 'a', b: 'b', x: 'cT', d: 'd' });
    });
  });

  it('without barriers is mergeMap with that concurrency: at most two at once, in source order', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('abcd|');
      const result = '     ---ab-c(d|)';
      expectObservable(
        source.pipe(mergeMapWithBarriers(takes(3), { concurrency: 2, alone: () => false })),
      ).toBe(result);
    });
  });

  it('asks a concurrency function at every decision: a limit raised meanwhile lets more start', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      let limit = 1;
      const source = cold('abcd|');
      // a runs alone (limit 1); once it is done the limit is 3, so b, c and d start together.
      const result = '     ---a--(bcd|)';
      const work = (v: string) =>
        timer(3).pipe(
          map(() => {
            limit = 3;
            return v;
          }),
        );
      expectObservable(
        source.pipe(mergeMapWithBarriers(work, { concurrency: () => limit, alone: () => false })),
      ).toBe(result);
    });
  });

  it('emits in completion order, like mergeMap', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('ab|');
      const result = '     --b(a|)';
      const work = (v: string) => timer(v === 'a' ? 3 : 1).pipe(map(() => v));
      expectObservable(source.pipe(mergeMapWithBarriers(work, { concurrency: 2, alone: () => false }))).toBe(
        result,
      );
    });
  });

  it('a barrier first runs alone and holds back what follows', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('Tab|');
      const result = '     --T-(ab|)';
      expectObservable(
        source.pipe(mergeMapWithBarriers(takes(2), { concurrency: 2, alone: (v) => v === 'T' })),
      ).toBe(result);
    });
  });

  it('two barriers in a row run one after the other', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('TU|');
      const result = '     --T-(U|)';
      expectObservable(
        source.pipe(mergeMapWithBarriers(takes(2), { concurrency: 3, alone: (v) => v === 'T' || v === 'U' })),
      ).toBe(result);
    });
  });

  it('projections that complete at once run one after another without recursion', () => {
    const out: number[] = [];
    const source = new Subject<number>();
    source
      .pipe(mergeMapWithBarriers((v: number) => of(v), { concurrency: 1, alone: (v) => v % 2 === 0 }))
      .subscribe((v) => out.push(v));
    for (let i = 0; i < 20_000; i++) source.next(i);
    source.complete();
    expect(out).toHaveLength(20_000);
    expect(out[19_999]).toBe(19_999);
  });

  it('queued values whose projections complete at once all run when a slow one ends', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('abc----|');
      const work = (v: string) => (v === 'a' ? timer(2).pipe(map(() => v)) : of(v));
      expectObservable(source.pipe(mergeMapWithBarriers(work, { concurrency: 1, alone: () => false }))).toBe(
        '--(abc)|',
      );
    });
  });

  it('an error of a projection is the output’s, and stops the rest', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('ab-c|');
      const work = (v: string) => (v === 'b' ? throwError(() => 'boom') : timer(3).pipe(map(() => v)));
      expectObservable(source.pipe(mergeMapWithBarriers(work, { concurrency: 2, alone: () => false }))).toBe(
        '-#',
        undefined,
        'boom',
      );
      expectSubscriptions(source.subscriptions).toBe('^!');
    });
  });

  it('unsubscribing tears down the source and every running projection', () => {
    testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const inner = cold('----x|');
      const source = hot('a-b-c|');
      expectObservable(
        source.pipe(mergeMapWithBarriers(() => inner, { concurrency: 2, alone: () => false })),
        '^--!',
      ).toBe('----');
      expectSubscriptions(inner.subscriptions).toBe(['^--!', '--^!']);
    });
  });

  it('refuses a concurrency below 1', () => {
    expect(() => mergeMapWithBarriers(takes(1), { concurrency: 0, alone: () => false })).toThrow(RangeError);
  });
});
