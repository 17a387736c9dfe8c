import { firstValueFrom, from, map, of, throwError, timer, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { Envelope, IngestMessage } from '../../../src/model/message.js';
import { parseRecord } from '../../../src/model/parse.js';
import { type Enrich, enrichInOrder, identityEnrich } from '../../../src/operators/enrich-in-order.js';
import { recordFactory } from '../../support/records.js';

const envelopes = (...records: ReturnType<ReturnType<typeof recordFactory>['event']>[]): Envelope[] =>
  records.map((r) => {
    const p = parseRecord(r, 1 << 20);
    if (!p.ok) throw new Error(p.reason);
    return p.envelope;
  });

const run = (enrich: Enrich, input: Envelope[]) =>
  firstValueFrom(from(input).pipe(enrichInOrder(enrich, { idleCloseMs: 10 }), toArray()));

describe('enrichInOrder', () => {
  it('passes messages through unchanged with the identity enrich', async () => {
    const r = recordFactory();
    const input = envelopes(r.event('e1', 'a'), r.event('e2', 'b'));
    const out = await run(identityEnrich, input);
    expect(out.map((e) => e.envelope)).toEqual(input);
    expect(out.every((e) => e.outcome === undefined)).toBe(true);
  });

  it('takes a message, a promise or an observable from enrich', async () => {
    const r = recordFactory();
    const input = envelopes(r.event('e1', 'a'), r.event('e2', 'b'), r.event('e3', 'c'));
    const add = (m: IngestMessage) => ({ ...m, data: { ...m.data, seen: true } }) as IngestMessage;
    const enrich: Enrich = (m) =>
      m.id === 'e1' ? add(m) : m.id === 'e2' ? Promise.resolve(add(m)) : of(add(m));
    const out = await run(enrich, input);
    expect(out.map((e) => e.envelope.message.data)).toEqual([{ seen: true }, { seen: true }, { seen: true }]);
  });

  it('dead-letters only the message whose enrich throws, rejects or changes its identity', async () => {
    const r = recordFactory();
    const input = envelopes(
      r.event('e1', 'a'),
      r.event('e2', 'a'),
      r.event('e3', 'a'),
      r.event('e4', 'a'),
      r.event('e5', 'a'),
    );
    const enrich: Enrich = (m) => {
      if (m.id === 'e1') throw new Error('cache down');
      if (m.id === 'e2') return Promise.reject(new Error('timeout'));
      if (m.id === 'e3') return throwError(() => new Error('nope'));
      if (m.id === 'e4') return { ...m, clientId: 'someone-else' } as IngestMessage;
      return m;
    };
    const out = await run(enrich, input);
    expect(out.map((e) => [e.envelope.message.id, e.outcome?.kind ?? 'ok'])).toEqual([
      ['e1', 'dead-letter'],
      ['e2', 'dead-letter'],
      ['e3', 'dead-letter'],
      ['e4', 'dead-letter'],
      ['e5', 'ok'],
    ]);
    expect(out[0]!.outcome).toMatchObject({ errorClass: 'rejected', reason: 'enrich failed: cache down' });
    expect(out[3]!.outcome).toMatchObject({ reason: 'enrich changed the id, clientId or type' });
  });

  it('runs one client’s enrich after another, clients side by side', () => {
    const r = recordFactory();
    const [a1, b1, a2] = envelopes(r.event('a1', 'a'), r.event('b1', 'b'), r.event('a2', 'a'));
    new TestScheduler((x, y) => expect(x).toEqual(y)).run(({ cold, expectObservable }) => {
      const source = cold('-xyz-|', { x: a1!, y: b1!, z: a2! });
      const slow: Enrich = (m) => timer(2).pipe(map(() => m));
      expectObservable(
        source.pipe(
          enrichInOrder(slow, { idleCloseMs: 10 }),
          map((e) => e.envelope.message.id),
        ),
      ).toBe('---ab(c|)', { a: 'a1', b: 'b1', c: 'a2' });
    });
  });
});
