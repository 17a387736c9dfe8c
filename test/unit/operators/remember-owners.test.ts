import { delay, EMPTY, map, type Observable, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { type OriginKey, originKeyOf } from '../../../src/model/message.js';
import { decide, type Entry } from '../../../src/model/outcome.js';
import { rememberOwners } from '../../../src/operators/remember-owners.js';
import type { EventKey, KnownCopies } from '../../../src/sinks/ports.js';
import { deleteEntry, label, openEntry, recordFactory } from '../../support/data/records.js';
import { InMemoryKnownCopies } from '../../support/fakes/in-memory-ports.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** A KnownCopies that notes what it is told, answering with `answer`. */
const listening = (answer: () => Observable<unknown> = () => of(undefined)) => {
  const told: { event: EventKey; owner: OriginKey }[][] = [];
  const known: KnownCopies = {
    owners: () => of(new Map()),
    remember: (owners) => {
      told.push([...owners]);
      return answer();
    },
  };
  return { known, told };
};

describe('rememberOwners', () => {
  it('behaves as its marble diagram: owners of decided events remembered, the batch unchanged', () => {
    const r = recordFactory('t', 0);
    const a = decide(openEntry(r.event('a', 'c')), { kind: 'indexed' });
    const b = decide(openEntry(r.event('b', 'c')), { kind: 'duplicate', by: 't/0/99' });
    const p = decide(openEntry(r.profile('p', 'c', 1, {})), { kind: 'indexed' });
    const known = new InMemoryKnownCopies();
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('--x--|', { x: [a, b, p] }).pipe(rememberOwners(known))).toBe('--x--|', {
        x: [a, b, p],
      });
    });
    expect([...known.marks]).toEqual([
      ['a', originKeyOf(a.record)],
      ['b', 't/0/99'],
    ]);
  });

  it('passes the same batch on, in one call per batch, with each event’s id and ts', () => {
    const r = recordFactory('t', 2);
    const a = decide(openEntry(r.event('a', 'c')), { kind: 'indexed' });
    const { known, told } = listening();
    let out: Entry[] | undefined;
    const batch = [a];
    of(batch)
      .pipe(rememberOwners(known))
      .subscribe((x) => {
        out = x;
      });
    expect(out).toBe(batch);
    expect(told).toEqual([
      [{ event: expect.objectContaining({ id: 'a', ts: a.message!.ts }), owner: 't/2/0' }],
    ]);
  });

  it('remembers nothing for window duplicates (no owner known), dead letters, profiles, tombstones or poison', () => {
    const r = recordFactory();
    const { known, told } = listening();
    const batch = [
      decide(openEntry(r.event('w', 'c')), { kind: 'duplicate', by: 'window' }),
      decide(openEntry(r.event('x', 'c')), { kind: 'dead-letter', errorClass: 'rejected', reason: 'r' }),
      decide(openEntry(r.profile('p', 'c', 1, {})), { kind: 'indexed' }),
      decide(deleteEntry(r.tombstone('c'), 'c'), { kind: 'deleted' }),
      decide(
        { record: r.raw('junk'), seq: 9 },
        { kind: 'dead-letter', errorClass: 'invalid-json', reason: 'r' },
      ),
    ];
    let out: Entry[] | undefined;
    of(batch)
      .pipe(rememberOwners(known))
      .subscribe((x) => {
        out = x;
      });
    expect(told).toEqual([]);
    expect(out).toBe(batch);
  });

  it('keeps batches in order when the store answers slowly', () => {
    const r = recordFactory();
    const first = [decide(openEntry(r.event('a', 'c')), { kind: 'indexed' })];
    const second = [decide(openEntry(r.event('b', 'c')), { kind: 'indexed' })];
    testScheduler().run(({ cold, expectObservable }) => {
      let n = 0;
      const { known } = listening(() => of(undefined).pipe(delay(n++ === 0 ? 4 : 1)));
      expectObservable(
        cold('xy|', { x: first, y: second }).pipe(
          rememberOwners(known),
          map((b) => b.map(label).join()),
        ),
      ).toBe('----x(y|)', { x: 'a:indexed', y: 'b:indexed' });
    });
  });

  it('passes the batch on even when the store answers without a value', () => {
    const r = recordFactory();
    const batch = [decide(openEntry(r.event('a', 'c')), { kind: 'indexed' })];
    const { known } = listening(() => EMPTY);
    const out: Entry[][] = [];
    of(batch)
      .pipe(rememberOwners(known))
      .subscribe((x) => out.push(x));
    expect(out).toEqual([batch]);
  });
});
