import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { Done } from '../../../src/model/outcome.js';
import { observeOutcomes } from '../../../src/operators/observe-outcomes.js';
import { decidedEntry, recordFactory } from '../../support/data/records.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

const done = (id: string, seq: number): Done => ({
  seq,
  payloads: [],
  entry: decidedEntry(recordFactory().event(id, 'c'), { kind: 'indexed' }) as Done['entry'],
});

describe('observeOutcomes', () => {
  it('behaves as its marble diagram: each batch shown once, passed on unchanged', () => {
    const ab = [done('a', 0), done('b', 1)];
    const c = [done('c', 2)];
    const seen: Done[][] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('--x--y--|', { x: ab, y: c }).pipe(observeOutcomes((b) => seen.push(b)))).toBe(
        '--x--y--|',
        { x: ab, y: c },
      );
    });
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBe(ab);
    expect(seen[1]).toBe(c);
  });

  it('shows the batch before it reaches the next stage', () => {
    const order: string[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const out = cold('x|', { x: [done('a', 0)] }).pipe(observeOutcomes(() => order.push('seen')));
      out.subscribe(() => order.push('next'));
      expectObservable(out).toBe('x|', { x: [done('a', 0)] });
    });
    expect(order.slice(0, 2)).toEqual(['seen', 'next']);
  });

  it('errors the result when the observer throws (a metrics bug is not hidden)', () => {
    const boom = new Error('label cardinality');
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(
        cold('x|', { x: [done('a', 0)] }).pipe(
          observeOutcomes(() => {
            throw boom;
          }),
        ),
      ).toBe('#', undefined, boom);
    });
  });

  it('passes errors and completion through', () => {
    const err = new Error('upstream');
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<Done[]>('-#', undefined, err).pipe(observeOutcomes(() => undefined))).toBe(
        '-#',
        undefined,
        err,
      );
      expectObservable(cold<Done[]>('-|').pipe(observeOutcomes(() => undefined))).toBe('-|');
    });
  });
});
