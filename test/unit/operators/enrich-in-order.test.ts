import {
  EMPTY,
  firstValueFrom,
  from,
  map,
  type Observable,
  of,
  Subject,
  throwError,
  timer,
  toArray,
  VirtualTimeScheduler,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { RecordRejectedError } from '../../../src/model/failures.js';
import type { IngestMessage } from '../../../src/model/message.js';
import { decide, type Entry } from '../../../src/model/outcome.js';
import { type Enrich, enrichInOrder, identityEnrich } from '../../../src/operators/enrich-in-order.js';
import { deleteEntry, label, openEntry, recordFactory, testRetryPolicy } from '../../support/data/records.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** A transient failure as the classification knows it (a refused connection). */
const refused = () => Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });

const options = (extra: Partial<Parameters<typeof enrichInOrder>[1]> = {}) => ({
  idleCloseMs: 10,
  retry: testRetryPolicy(10, 100),
  ...extra,
});

const run = (enrich: Enrich, input: Entry[]) =>
  firstValueFrom(from(input).pipe(enrichInOrder(enrich, options()), toArray()));

const withSeen = (m: IngestMessage) => ({ ...m, data: { ...m.data, seen: true } }) as IngestMessage;

/** Entries by marble character; `<client><n>` events, e.g. a1 = first event of client a. */
function clientEvents(...specs: string[]) {
  const r = recordFactory();
  return specs.map((s) => openEntry(r.event(s, s[0]!)));
}

describe('enrichInOrder', () => {
  it('behaves as its marble diagram: one client at a time, clients side by side, decided entries at once', () => {
    const [a1, b1, a2] = clientEvents('a1', 'b1', 'a2');
    const x = decide(openEntry(recordFactory().event('x', 'a')), { kind: 'duplicate', by: 'window' });
    testScheduler().run(({ cold, expectObservable }) => {
      const slow: Enrich = (m) => timer(4).pipe(map(() => m));
      const source = cold('-abcx-|', { a: a1!, b: b1!, c: a2!, x });
      // a1 1→5; b1 2→6 beside it; a2 arrives at 3 and starts when a1 is done, 5→9; x (decided)
      // passes at 4; completion waits for a2.
      expectObservable(source.pipe(enrichInOrder(slow, options()), map(label))).toBe('----xab--(c|)', {
        a: 'a1:open',
        b: 'b1:open',
        c: 'a2:open',
        x: 'x:duplicate',
      });
    });
  });

  it('passes entries through as they are with the identity enrich', async () => {
    const input = clientEvents('a1', 'b1');
    const out = await run(identityEnrich, input);
    expect(out).toEqual(input);
    expect(out[0]).toBe(input[0]);
  });

  it('with the identity enrich, passes each entry at the frame it came, in order, opening no lane', () => {
    const r = recordFactory();
    const [a1, b1, a2] = [r.event('a1', 'a'), r.event('b1', 'b'), r.event('a2', 'a')].map(openEntry);
    const ta = deleteEntry(r.tombstone('a'), 'a');
    const x = decide(openEntry(r.event('x', 'a')), { kind: 'duplicate', by: 'window' });
    const groups: number[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-ab-xct|', { a: a1!, b: b1!, c: a2!, x, t: ta });
      const result = source.pipe(
        enrichInOrder(identityEnrich, options({ onGroupsChanged: (n) => groups.push(n) })),
      );
      expectObservable(result.pipe(map(label))).toBe('-ab-xct|', {
        a: 'a1:open',
        b: 'b1:open',
        c: 'a2:open',
        x: 'x:duplicate',
        t: 'del(a):open',
      });
    });
    expect(groups).toEqual([]);
  });

  it('takes a message, a promise, an observable or an array of one from enrich', async () => {
    const input = clientEvents('a1', 'b1', 'c1', 'd1');
    const enrich: Enrich = (m) =>
      m.id === 'a1'
        ? withSeen(m)
        : m.id === 'b1'
          ? Promise.resolve(withSeen(m))
          : m.id === 'c1'
            ? of(withSeen(m))
            : [withSeen(m)];
    // Clients run side by side, so their results come out as they are ready: sorted here.
    const out = (await run(enrich, input)).sort((x, y) => x.seq - y.seq);
    expect(out.map((e) => [e.message!.id, e.message!.data])).toEqual([
      ['a1', { seen: true }],
      ['b1', { seen: true }],
      ['c1', { seen: true }],
      ['d1', { seen: true }],
    ]);
    expect(out.every((e) => e.outcome === undefined)).toBe(true);
    // The entry keeps its record and seq; only the message changes.
    expect(out.map((e) => [e.record, e.seq])).toEqual(input.map((e) => [e.record, e.seq]));
  });

  it('does not call enrich for decided entries or for tombstones', async () => {
    const r = recordFactory();
    const dead = decide(openEntry(r.event('x', 'a')), {
      kind: 'dead-letter',
      errorClass: 'schema',
      reason: 'r',
    });
    const tombstone = deleteEntry(r.tombstone('a'), 'a');
    const seen: string[] = [];
    const out = await run(
      (m) => {
        seen.push(m.id);
        return m;
      },
      [dead, tombstone],
    );
    expect(seen).toEqual([]);
    expect(out).toEqual([dead, tombstone]);
  });

  describe('bad data is a dead letter of class rejected, for that message only', () => {
    it.each([
      [
        'throws a RecordRejectedError',
        () => {
          throw new RecordRejectedError('unknown plan "x"');
        },
      ],
      ['rejects with one', () => Promise.reject(new RecordRejectedError('unknown plan "x"'))],
      ['errors with one', () => throwError(() => new RecordRejectedError('unknown plan "x"'))],
    ])('when enrich %s', async (_, bad) => {
      const input = clientEvents('a1', 'a2', 'a3');
      const out = await run((m) => (m.id === 'a2' ? (bad as () => never)() : m), input);
      expect(out.map(label)).toEqual(['a1:open', 'a2:dead-letter', 'a3:open']);
      expect(out[1]!.outcome).toEqual({
        kind: 'dead-letter',
        errorClass: 'rejected',
        reason: 'enrich failed: unknown plan "x"',
      });
      // The dead letter keeps the original record (its bytes go to the DLQ).
      expect(out[1]!.record).toBe(input[1]!.record);
    });

    it.each([
      ['the id', (m: IngestMessage) => ({ ...m, id: 'other' })],
      ['the clientId', (m: IngestMessage) => ({ ...m, clientId: 'someone-else' })],
      ['the type', (m: IngestMessage) => ({ ...m, type: 'profile', version: 1 })],
    ])('when enrich changes %s (at once or later)', async (_, change) => {
      const sync = await run((m) => change(m) as IngestMessage, clientEvents('a1'));
      const later = await run((m) => Promise.resolve(change(m) as IngestMessage), clientEvents('a1'));
      for (const out of [sync, later]) {
        expect(out[0]!.outcome).toEqual({
          kind: 'dead-letter',
          errorClass: 'rejected',
          reason: 'enrich changed the id, clientId or type',
        });
      }
    });
  });

  describe('anything else is retried with the retry policy, in virtual time', () => {
    it('retries a transient failure with backoff while the client’s later messages wait; other clients go on', () => {
      const [a1, a2, b1] = clientEvents('a1', 'a2', 'b1');
      const retries: number[] = [];
      testScheduler().run(({ cold, expectObservable }) => {
        let calls = 0;
        const flaky: Enrich = (m) => (m.id === 'a1' && ++calls <= 2 ? throwError(refused) : of(m));
        const source = cold('abc|', { a: a1!, b: a2!, c: b1! });
        // a1 fails at 0, retried at 10 (fails), at 30 (succeeds); a2 waits behind it; b1 at 2.
        expectObservable(
          source.pipe(enrichInOrder(flaky, options({ onRetry: (_, n) => retries.push(n) })), map(label)),
        ).toBe('--c 27ms (ab|)', { a: 'a1:open', b: 'a2:open', c: 'b1:open' });
      });
      expect(retries).toEqual([1, 2]);
    });

    it('retries an enrich that throws synchronously, calling it again each time', () => {
      const [a1] = clientEvents('a1');
      let calls = 0;
      testScheduler().run(({ cold, expectObservable }) => {
        const flaky: Enrich = (m) => {
          if (++calls <= 3) throw refused();
          return m;
        };
        // Fails at 0, 10, 30; succeeds at 70 (delays 10, 20, 40).
        expectObservable(cold('a|', { a: a1! }).pipe(enrichInOrder(flaky, options()), map(label))).toBe(
          '70ms (a|)',
          { a: 'a1:open' },
        );
      });
      expect(calls).toBe(4);
    });

    it('retries an error it does not recognise too (the enricher’s trouble, not the record’s)', () => {
      const [a1] = clientEvents('a1');
      testScheduler().run(({ cold, expectObservable }) => {
        let calls = 0;
        const flaky: Enrich = (m) =>
          ++calls === 1 ? throwError(() => new Error('cache down')) : timer(5).pipe(map(() => m));
        expectObservable(cold('a|', { a: a1! }).pipe(enrichInOrder(flaky, options()), map(label))).toBe(
          '15ms (a|)',
          { a: 'a1:open' },
        );
      });
    });

    it('caps the backoff at the policy’s maxMs and never gives up', () => {
      const [a1] = clientEvents('a1');
      testScheduler().run(({ cold, expectObservable }) => {
        let calls = 0;
        const flaky: Enrich = (m) => (++calls <= 8 ? throwError(refused) : of(m));
        // 10 + 20 + 40 + 80 + 4 × 100 = 550.
        expectObservable(cold('a|', { a: a1! }).pipe(enrichInOrder(flaky, options()), map(label))).toBe(
          '550ms (a|)',
          { a: 'a1:open' },
        );
      });
    });

    it('dead-letters a message whose retry turns up bad data', () => {
      const [a1] = clientEvents('a1');
      testScheduler().run(({ cold, expectObservable }) => {
        let calls = 0;
        const enrich: Enrich = () =>
          throwError(() => (++calls === 1 ? refused() : new RecordRejectedError('no such customer')));
        expectObservable(cold('a|', { a: a1! }).pipe(enrichInOrder(enrich, options()), map(label))).toBe(
          '10ms (a|)',
          { a: 'a1:dead-letter' },
        );
      });
    });

    it('cancels a pending retry on unsubscribe', () => {
      const scheduler = new VirtualTimeScheduler();
      const [a1] = clientEvents('a1');
      const source = new Subject<Entry>();
      let calls = 0;
      const sub = source
        .pipe(
          enrichInOrder(() => {
            calls++;
            return throwError(refused);
          }, options({ scheduler })),
        )
        .subscribe();
      source.next(a1!);
      expect(scheduler.actions.map((a) => a.delay)).toEqual([10]);
      sub.unsubscribe();
      scheduler.flush();
      expect(calls).toBe(1);
    });
  });

  it('lets a tombstone wait in its client’s lane behind the client’s messages; another client’s passes', () => {
    const r = recordFactory();
    const a1 = openEntry(r.event('a1', 'a'));
    const ta = deleteEntry(r.tombstone('a'), 'a');
    const tb = deleteEntry(r.tombstone('b'), 'b');
    testScheduler().run(({ cold, expectObservable }) => {
      const slow: Enrich = (m) => timer(5).pipe(map(() => m));
      expectObservable(
        cold('atu|', { a: a1, t: ta, u: tb }).pipe(enrichInOrder(slow, options()), map(label)),
      ).toBe('--u--(at|)', { a: 'a1:open', t: 'del(a):open', u: 'del(b):open' });
    });
  });

  it('lets a decided entry with a message pass at once, not behind its client', () => {
    const r = recordFactory();
    const a1 = openEntry(r.event('a1', 'a'));
    const copy = decide(openEntry(r.event('a1', 'a')), { kind: 'duplicate', by: 'window' });
    testScheduler().run(({ cold, expectObservable }) => {
      const slow: Enrich = (m) => timer(5).pipe(map(() => m));
      expectObservable(cold('ad|', { a: a1, d: copy }).pipe(enrichInOrder(slow, options()), map(label))).toBe(
        '-d---(a|)',
        { a: 'a1:open', d: 'a1:duplicate' },
      );
    });
  });

  describe('every entry comes out exactly once, whatever enrich answers', () => {
    it('an enrich that completes without a message does not lose the entry', async () => {
      const out = await run(() => EMPTY as Observable<IngestMessage>, clientEvents('a1'));
      expect(out).toHaveLength(1);
      expect(out[0]!.outcome).toBeDefined();
    });

    it('an enrich that answers two messages does not duplicate the entry', async () => {
      const out = await run((m) => of(m, withSeen(m)), clientEvents('a1'));
      expect(out).toHaveLength(1);
    });
  });
});
