import { delay, map, type Observable, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { type OriginKey, originKeyOf } from '../../../src/model/message.js';
import { decide, type Entry } from '../../../src/model/outcome.js';
import { skipKnownCopies } from '../../../src/operators/skip-known-copies.js';
import type { EventKey, KnownCopies } from '../../../src/sinks/ports.js';
import { label, openEntry, recordFactory } from '../../support/data/records.js';
import { InMemoryKnownCopies } from '../../support/fakes/in-memory-ports.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

const labels = (batch: Entry[]) => batch.map(label).join(' ');

describe('skipKnownCopies', () => {
  it('behaves as its marble diagram: another owner → duplicate; its own origin (a replay) → goes on', () => {
    const r = recordFactory('t', 0);
    const a = openEntry(r.event('a', 'c'));
    const b = openEntry(r.event('b', 'c'));
    const c = openEntry(r.event('c', 'c'));
    const p = openEntry(r.profile('p', 'c', 1, { x: 1 }));
    const known = new InMemoryKnownCopies();
    known.marks.set('b', 't/0/99');
    known.marks.set('c', originKeyOf(c.record));
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('--x--|', { x: [a, b, c, p] }).pipe(skipKnownCopies(known), map(labels))).toBe(
        '--x--|',
        {
          x: 'a:open b:duplicate c:open p:open',
        },
      );
    });
  });

  it('says who owns the copy', () => {
    const r = recordFactory('t', 0);
    const b = openEntry(r.event('b', 'c'));
    const known = new InMemoryKnownCopies();
    known.marks.set('b', 't/3/42');
    let out: Entry[] = [];
    of([b])
      .pipe(skipKnownCopies(known))
      .subscribe((x) => {
        out = x;
      });
    expect(out).toEqual([decide(b, { kind: 'duplicate', by: 't/3/42' })]);
  });

  it('leaves the batch as it is (the same array) when the store knows none of them', () => {
    const r = recordFactory();
    const batch = [openEntry(r.event('a', 'c')), openEntry(r.event('b', 'c'))];
    let out: Entry[] | undefined;
    of(batch)
      .pipe(skipKnownCopies(new InMemoryKnownCopies()))
      .subscribe((x) => {
        out = x;
      });
    expect(out).toBe(batch);
  });

  it('leaves everything to Elasticsearch while the store is away (Redis down: every answer unknown)', () => {
    const r = recordFactory('t', 0);
    const batch = [openEntry(r.event('a', 'c'))];
    const known = new InMemoryKnownCopies();
    known.marks.set('a', 't/0/77');
    known.available = false;
    let out: Entry[] | undefined;
    of(batch)
      .pipe(skipKnownCopies(known))
      .subscribe((x) => {
        out = x;
      });
    expect(out).toBe(batch);
  });

  it('asks the store only about open events, once per batch, and not at all without any', () => {
    const r = recordFactory();
    const asked: string[][] = [];
    const known: KnownCopies = {
      owners: (events: readonly EventKey[]) => {
        asked.push(events.map((e) => e.id));
        return of(new Map<string, OriginKey>());
      },
      remember: () => of(undefined),
    };
    const open = openEntry(r.event('open', 'c'));
    const decided = decide(openEntry(r.event('decided', 'c')), { kind: 'duplicate', by: 'window' });
    const profile = openEntry(r.profile('p', 'c', 1, {}));
    of([open, decided, profile], [decided, profile], []).pipe(skipKnownCopies(known)).subscribe();
    expect(asked).toEqual([['open']]);
  });

  it('asks with the event’s id and ts (the ts picks the index of a dated EVENTS_INDEX)', () => {
    const r = recordFactory();
    const e = openEntry(r.event('a', 'c'));
    const asked: EventKey[] = [];
    const known: KnownCopies = {
      owners: (events) => {
        asked.push(...events);
        return of(new Map());
      },
      remember: () => of(undefined),
    };
    of([e]).pipe(skipKnownCopies(known)).subscribe();
    expect(asked).toEqual([expect.objectContaining({ id: 'a', ts: e.message!.ts })]);
  });

  it('never decides an entry that was decided already, even when the store knows its id', () => {
    const r = recordFactory('t', 0);
    const dead = decide(openEntry(r.event('a', 'c')), {
      kind: 'dead-letter',
      errorClass: 'rejected',
      reason: 'x',
    });
    const open = openEntry(r.event('b', 'c'));
    const known = new InMemoryKnownCopies();
    known.marks.set('a', 't/0/99');
    known.marks.set('b', 't/0/99');
    let out: Entry[] = [];
    of([dead, open])
      .pipe(skipKnownCopies(known))
      .subscribe((x) => {
        out = x;
      });
    expect(out[0]).toBe(dead);
    expect(out[1]!.outcome).toEqual({ kind: 'duplicate', by: 't/0/99' });
  });

  it('keeps batches in order when the store answers slowly (one lookup at a time)', () => {
    const r = recordFactory();
    const first = [openEntry(r.event('a', 'c'))];
    const second = [openEntry(r.event('b', 'c'))];
    testScheduler().run(({ cold, expectObservable }) => {
      // The first lookup takes 5 frames, the second 1: the second batch still comes out second.
      const known: KnownCopies = {
        owners: (events) => of(new Map<string, OriginKey>()).pipe(delay(events[0]!.id === 'a' ? 5 : 1)),
        remember: () => of(undefined),
      };
      expectObservable(cold('xy|', { x: first, y: second }).pipe(skipKnownCopies(known), map(labels))).toBe(
        '-----x(y|)',
        { x: 'a:open', y: 'b:open' },
      );
    });
  });

  it('passes a store error on (the port promises never to fail; an error is a bug)', () => {
    const r = recordFactory();
    testScheduler().run(({ cold, expectObservable }) => {
      const boom = new Error('bug');
      const known: KnownCopies = {
        owners: (): Observable<ReadonlyMap<string, OriginKey>> => {
          throw boom;
        },
        remember: () => of(undefined),
      };
      expectObservable(cold('x|', { x: [openEntry(r.event('a', 'c'))] }).pipe(skipKnownCopies(known))).toBe(
        '#',
        undefined,
        boom,
      );
    });
  });

  describe('paced while lookups find no copy (REDIS_LOOKUP_BACKOFF_MS)', () => {
    /** A store that answers "nobody" except for the ids in `copies`, and records what it was asked. */
    const recordingStore = (copies: ReadonlyMap<string, OriginKey> = new Map()) => {
      const asked: string[][] = [];
      const known: KnownCopies = {
        owners: (events) => {
          asked.push(events.map((e) => e.id));
          return of(new Map([...copies].filter(([id]) => events.some((e) => e.id === id))));
        },
        remember: () => of(undefined),
      };
      return { known, asked };
    };

    it('behaves as its marble diagram: a asked (none: wait 50 ms), b not; c asked (none: wait 100 ms), d not', () => {
      const r = recordFactory();
      const batch = (id: string): Entry[] => [openEntry(r.event(id, 'x'))];
      const [a, b, c, d] = [batch('a'), batch('b'), batch('c'), batch('d')];
      const { known, asked } = recordingStore();
      testScheduler().run(({ cold, expectObservable }) => {
        const batches = cold('a 10ms b 50ms c 10ms d|', { a, b, c, d });
        expectObservable(batches.pipe(skipKnownCopies(known, { backoffMaxMs: 100 }), map(labels))).toBe(
          'a 10ms b 50ms c 10ms d|',
          { a: 'a:open', b: 'b:open', c: 'c:open', d: 'd:open' },
        );
      });
      expect(asked).toEqual([['a'], ['c']]);
    });

    it('a lookup that finds a copy brings back a lookup for every batch', () => {
      const r = recordFactory('t', 0);
      const batch = (id: string) => [openEntry(r.event(id, 'x'))];
      const { known, asked } = recordingStore(new Map([['copy', 't/0/99']]));
      testScheduler().run(({ cold, expectObservable }) => {
        // fresh (asked: none, wait 50), skipped, copy (asked after the wait: found), next, last
        const batches = cold('a 10ms b 50ms c 1ms d 1ms e|', {
          a: batch('fresh'),
          b: batch('skipped'),
          c: batch('copy'),
          d: batch('next'),
          e: batch('last'),
        });
        expectObservable(batches.pipe(skipKnownCopies(known, { backoffMaxMs: 1000 }), map(labels))).toBe(
          'a 10ms b 50ms c 1ms d 1ms e|',
          { a: 'fresh:open', b: 'skipped:open', c: 'copy:duplicate', d: 'next:open', e: 'last:open' },
        );
      });
      // After the copy every batch is asked; "next" found nothing, so "last" (1 ms later) waits.
      expect(asked).toEqual([['fresh'], ['copy'], ['next']]);
    });

    it('a batch whose events are all its own (a replay) is no copy: the lookups stay paced', () => {
      const r = recordFactory('t', 0);
      const own = openEntry(r.event('own', 'x'));
      const later = [openEntry(r.event('later', 'x'))];
      const { known, asked } = recordingStore(new Map([['own', originKeyOf(own.record)]]));
      testScheduler().run(({ cold, expectObservable }) => {
        expectObservable(
          cold('a 10ms b|', { a: [own], b: later }).pipe(
            skipKnownCopies(known, { backoffMaxMs: 100 }),
            map(labels),
          ),
        ).toBe('a 10ms b|', { a: 'own:open', b: 'later:open' });
      });
      expect(asked).toEqual([['own']]);
    });

    it('with 0 (or no option) every batch is asked', () => {
      const r = recordFactory();
      for (const options of [{ backoffMaxMs: 0 }, {}]) {
        const { known, asked } = recordingStore();
        of([openEntry(r.event('a', 'x'))], [openEntry(r.event('b', 'x'))], [openEntry(r.event('c', 'x'))])
          .pipe(skipKnownCopies(known, options))
          .subscribe();
        expect(asked).toEqual([['a'], ['b'], ['c']]);
      }
    });

    it('each subscription (a partition graph) paces on its own', () => {
      const r = recordFactory();
      const { known, asked } = recordingStore();
      const batches = of([openEntry(r.event('a', 'x'))], [openEntry(r.event('b', 'x'))]);
      const op = skipKnownCopies(known, { backoffMaxMs: 1000 });
      batches.pipe(op).subscribe();
      batches.pipe(op).subscribe();
      // Each subscription asks about its first batch; the second of each waits.
      expect(asked).toEqual([['a'], ['a']]);
    });
  });
});
