import { delay, map, type Observable, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { originKeyOf } from '../../../src/model/message.js';
import { decide, type Entry } from '../../../src/model/outcome.js';
import type { MergedUpdate, ProfileDocument } from '../../../src/model/profile-merge.js';
import { writeDocuments } from '../../../src/operators/write-documents.js';
import { recordBytes } from '../../../src/pushback/intake/bytes-in-flight.js';
import type { DocumentStore, EventDocument, EventWrite } from '../../../src/sinks/ports.js';
import { deleteEntry, label, openEntry, recordFactory, TS } from '../../support/data/records.js';
import { InMemoryDocumentStore } from '../../support/fakes/in-memory-ports.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** Runs one batch through writeDocuments with a synchronous store and returns what comes out. */
function write(store: DocumentStore, batch: Entry[]): Entry[] {
  let out: Entry[] | undefined;
  of(batch)
    .pipe(writeDocuments(store))
    .subscribe((x) => {
      out = x;
    });
  if (out === undefined) throw new Error('writeDocuments emitted nothing');
  return out;
}

const labels = (batch: Entry[]) => batch.map(label);

/** Like Elasticsearch with a mapping that refuses a field named `bad`: the whole document is refused. */
const refusesBad = () =>
  new InMemoryDocumentStore({
    refuseProfile: (doc: ProfileDocument) =>
      Object.hasOwn(doc.data, 'bad')
        ? 'Elasticsearch 400 document_parsing_exception: failed to parse field [data.bad]'
        : undefined,
  });

/** The store's calls, as `op:<clients or ids>` strings. */
const callsOf = (store: InMemoryDocumentStore) =>
  store.calls.map((c) => `${c.op}:${('clients' in c ? c.clients : c.ids).join(',')}`);

describe('writeDocuments', () => {
  it('behaves as its marble diagram', () => {
    const r = recordFactory('t', 0);
    const store = new InMemoryDocumentStore();
    // e2's id was created earlier by another record.
    write(store, [openEntry(recordFactory('t', 0).event('e2', 'x'))]);
    r.at(10);
    const batch = [
      openEntry(r.event('e1', 'c')),
      openEntry(r.profile('p1', 'c', 1, { plan: 'pro' })),
      openEntry(r.profile('p2', 'c', 2, { email: 'a@b' })),
      openEntry(r.event('e2', 'x')),
      deleteEntry(r.tombstone('c'), 'c'),
    ];
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('--x--|', { x: batch }).pipe(writeDocuments(store), map(labels))).toBe('--y--|', {
        y: ['e1:indexed', 'p1:indexed', 'p2:indexed', 'e2:duplicate', 'del(c):deleted'],
      });
    });
  });

  describe('events', () => {
    it('creates an event with its origin (topic, partition, offset of this record) → indexed', () => {
      const r = recordFactory('ingest.events', 3);
      r.at(41);
      const store = new InMemoryDocumentStore();
      const out = write(store, [openEntry(r.event('e1', 'c-1', 'signup', { plan: 'pro' }))]);
      expect(out[0]!.outcome).toEqual({ kind: 'indexed' });
      expect(store.events.get('e1')).toEqual({
        clientId: 'c-1',
        name: 'signup',
        ts: TS,
        data: { plan: 'pro' },
        origin: { topic: 'ingest.events', partition: 3, offset: 41 },
      });
    });

    it('tells a replay (the same record again: its own origin) → indexed, from a copy (another origin) → duplicate', () => {
      const r = recordFactory('t', 0);
      const original = r.event('e1', 'c', 'signup');
      const store = new InMemoryDocumentStore();
      write(store, [openEntry(original)]);

      // A crash before the commit, then the same record is read again: still its own.
      const replay = write(store, [openEntry(original)]);
      expect(replay[0]!.outcome).toEqual({ kind: 'indexed' });

      // The same id re-sent at another offset, or on another partition: a copy.
      r.skip(5);
      const copy = write(store, [openEntry(r.event('e1', 'c', 'signup'))]);
      expect(copy[0]!.outcome).toEqual({ kind: 'duplicate', by: 't/0/0' });
      const elsewhere = write(store, [openEntry(recordFactory('t', 1).event('e1', 'c', 'signup'))]);
      expect(elsewhere[0]!.outcome).toEqual({ kind: 'duplicate', by: 't/0/0' });
      // The first document stays.
      expect(store.events.get('e1')!.origin).toEqual({ topic: 't', partition: 0, offset: 0 });
    });

    it('gives an id written twice in one batch to the first record, the second is its duplicate', () => {
      const r = recordFactory('t', 0);
      const store = new InMemoryDocumentStore();
      const out = write(store, [openEntry(r.event('e1', 'c')), openEntry(r.event('e1', 'c'))]);
      expect(out.map((e) => e.outcome)).toEqual([{ kind: 'indexed' }, { kind: 'duplicate', by: 't/0/0' }]);
    });

    it('calls a document without an origin (written before origins existed) another record’s', () => {
      const r = recordFactory('t', 0);
      const store = new InMemoryDocumentStore();
      store.events.set('old', { clientId: 'c', name: 'n', ts: TS, data: {} } as EventDocument['source']);
      expect(write(store, [openEntry(r.event('old', 'c'))])[0]!.outcome).toEqual({
        kind: 'duplicate',
        by: '',
      });
    });

    it('dead-letters an event the store refuses (the document itself), with the reason; the rest is written', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore({
        refuseEvent: (e) =>
          e.id === 'bad' ? 'Elasticsearch 400 document_parsing_exception: [data.n]' : undefined,
      });
      const out = write(store, [
        openEntry(r.event('ok1', 'c')),
        openEntry(r.event('bad', 'c')),
        openEntry(r.event('ok2', 'c')),
      ]);
      expect(labels(out)).toEqual(['ok1:indexed', 'bad:dead-letter', 'ok2:indexed']);
      expect(out[1]!.outcome).toEqual({
        kind: 'dead-letter',
        errorClass: 'rejected',
        reason: 'Elasticsearch 400 document_parsing_exception: [data.n]',
      });
    });

    it('writes all the events of a batch in one call', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      write(store, [
        openEntry(r.event('a', 'c')),
        openEntry(r.event('b', 'd')),
        openEntry(r.event('c', 'c')),
      ]);
      expect(callsOf(store)).toEqual(['createEvents:a,b,c']);
    });

    it('tells a replay of a record at an offset beyond 2^53 from a copy', () => {
      const r = recordFactory('t', 0);
      r.at('9007199254740993');
      const original = r.event('big', 'c');
      const store = new InMemoryDocumentStore();
      write(store, [openEntry(original)]);
      expect(store.ownerOf('big')).toBe(originKeyOf(original));
      expect(write(store, [openEntry(original)])[0]!.outcome).toEqual({ kind: 'indexed' });
    });
  });

  describe('profiles', () => {
    it('merges a client’s updates into one write per batch, one call for all clients', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      const out = write(store, [
        openEntry(r.profile('p1', 'c', 1, { plan: 'free', email: 'old@x' })),
        openEntry(r.profile('p2', 'd', 1, { plan: 'pro' })),
        openEntry(r.profile('p3', 'c', 2, { plan: 'pro' })),
      ]);
      expect(labels(out)).toEqual(['p1:indexed', 'p2:indexed', 'p3:indexed']);
      expect(callsOf(store)).toEqual(['mergeProfiles:c,d']);
      expect(store.profiles.get('c')).toMatchObject({ version: 2, data: { plan: 'pro', email: 'old@x' } });
      expect(store.profiles.get('d')).toMatchObject({ version: 1, data: { plan: 'pro' } });
    });

    it('decides an update that wins no field in its batch stale, whatever order it came in', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      const out = write(store, [
        openEntry(r.profile('p2', 'c', 2, { plan: 'pro' })),
        openEntry(r.profile('p1', 'c', 1, { plan: 'free' })), // outranked on arrival
        openEntry(r.profile('p0', 'c', 0, { plan: 'trial', locale: 'fr' })), // wins locale
      ]);
      expect(labels(out)).toEqual(['p2:indexed', 'p1:stale', 'p0:indexed']);
      expect(store.profiles.get('c')!.data).toEqual({ plan: 'pro', locale: 'fr' });
    });

    it('decides updates every field of which the stored profile outranks stale', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      write(store, [openEntry(r.profile('p9', 'c', 9, { plan: 'pro' }))]);
      const out = write(store, [openEntry(r.profile('p3', 'c', 3, { plan: 'free' }))]);
      expect(out[0]!.outcome).toEqual({ kind: 'stale' });
      expect(store.profiles.get('c')!.data).toEqual({ plan: 'pro' });
    });

    it('writes events and profiles of one batch, each decided', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      const out = write(store, [openEntry(r.event('e', 'c')), openEntry(r.profile('p', 'c', 1, { a: 1 }))]);
      expect(labels(out)).toEqual(['e:indexed', 'p:indexed']);
      expect(callsOf(store).sort()).toEqual(['createEvents:e', 'mergeProfiles:c']);
    });

    it('stores and merges fields named __proto__, constructor and prototype like any other', () => {
      const before = Object.getOwnPropertyNames(Object.prototype).sort();
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      const value = (id: string, version: number, data: string) =>
        `{"id":"${id}","clientId":"c","type":"profile","version":${version},"ts":"${TS}","data":${data}}`;
      const out = write(store, [
        openEntry(r.raw(value('h1', 1, '{"__proto__":{"isAdmin":true},"constructor":1}'), 'c')),
        openEntry(r.raw(value('h2', 2, '{"__proto__":{"isAdmin":false},"prototype":{"x":1}}'), 'c')),
        openEntry(
          r.raw(
            `{"id":"ev","clientId":"c","type":"event","name":"n","ts":"${TS}","data":{"__proto__":{"polluted":1}}}`,
            'c',
          ),
        ),
      ]);
      expect(labels(out)).toEqual(['h1:indexed', 'h2:indexed', 'ev:indexed']);
      const data = store.profiles.get('c')!.data;
      expect(Object.keys(data).sort()).toEqual(['__proto__', 'constructor', 'prototype']);
      expect(Object.getOwnPropertyDescriptor(data, '__proto__')!.value).toEqual({ isAdmin: false });
      expect(Object.getOwnPropertyDescriptor(store.events.get('ev')!.data, '__proto__')!.value).toEqual({
        polluted: 1,
      });
      expect(({} as { isAdmin?: unknown }).isAdmin).toBeUndefined();
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
    });
  });

  describe('tombstones (TOMBSTONES=delete) in their place in the client’s order', () => {
    /** A store that notes, at each delete, what the profiles held just before it. */
    class WatchedStore extends InMemoryDocumentStore {
      readonly beforeDelete: Record<string, unknown>[] = [];
      override deleteProfiles(clientIds: readonly string[]) {
        for (const c of clientIds) this.beforeDelete.push({ ...this.profiles.get(c)?.data });
        return super.deleteProfiles(clientIds);
      }
    }

    it('writes the updates before the delete, then the delete, then the updates after it, onto nothing', () => {
      const r = recordFactory();
      const store = new WatchedStore();
      const out = write(store, [
        openEntry(r.profile('p1', 'c', 1, { plan: 'pro' })),
        openEntry(r.profile('d1', 'd', 1, { plan: 'free' })),
        openEntry(r.profile('p2', 'c', 2, { email: 'a@b' })),
        deleteEntry(r.tombstone('c'), 'c'),
        openEntry(r.profile('p3', 'c', 3, { locale: 'fr' })),
      ]);
      expect(labels(out)).toEqual(['p1:indexed', 'd1:indexed', 'p2:indexed', 'del(c):deleted', 'p3:indexed']);
      expect(callsOf(store)).toEqual(['mergeProfiles:c,d', 'deleteProfiles:c', 'mergeProfiles:c']);
      expect(store.beforeDelete).toEqual([{ plan: 'pro', email: 'a@b' }]);
      expect(store.profiles.get('c')).toMatchObject({ version: 3, data: { locale: 'fr' } });
      expect(store.profiles.get('d')!.data).toEqual({ plan: 'free' });
    });

    it('handles several tombstones of one client, each between its own updates', () => {
      const r = recordFactory();
      const store = new WatchedStore();
      const out = write(store, [
        deleteEntry(r.tombstone('c'), 'c'),
        openEntry(r.profile('p1', 'c', 1, { a: 1 })),
        deleteEntry(r.tombstone('c'), 'c'),
        openEntry(r.profile('p2', 'c', 2, { b: 2 })),
      ]);
      expect(labels(out)).toEqual(['del(c):deleted', 'p1:indexed', 'del(c):deleted', 'p2:indexed']);
      expect(callsOf(store)).toEqual([
        'deleteProfiles:c',
        'mergeProfiles:c',
        'deleteProfiles:c',
        'mergeProfiles:c',
      ]);
      expect(store.beforeDelete).toEqual([{}, { a: 1 }]);
      expect(store.profiles.get('c')!.data).toEqual({ b: 2 });
    });

    it('deletes the profiles of several clients in one call, and a missing profile is deleted all the same', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      write(store, [openEntry(r.profile('p', 'a', 1, { x: 1 }))]);
      store.calls.length = 0;
      const out = write(store, [
        deleteEntry(r.tombstone('a'), 'a'),
        deleteEntry(r.tombstone('nobody'), 'nobody'),
      ]);
      expect(labels(out)).toEqual(['del(a):deleted', 'del(nobody):deleted']);
      expect(callsOf(store)).toEqual(['deleteProfiles:a,nobody']);
      expect(store.profiles.size).toBe(0);
    });

    it('leaves events alone: a client’s events are not its profile', () => {
      const r = recordFactory();
      const store = new InMemoryDocumentStore();
      const out = write(store, [
        openEntry(r.event('e1', 'c')),
        deleteEntry(r.tombstone('c'), 'c'),
        openEntry(r.event('e2', 'c')),
      ]);
      expect(labels(out)).toEqual(['e1:indexed', 'del(c):deleted', 'e2:indexed']);
      expect([...store.events.keys()]).toEqual(['e1', 'e2']);
    });
  });

  describe('a client whose merged update the store refuses', () => {
    it('is written again one message at a time, so only the bad update is dead-lettered', () => {
      const r = recordFactory();
      const store = refusesBad();
      const out = write(store, [
        openEntry(r.profile('p1', 'c', 1, { plan: 'pro' })),
        openEntry(r.profile('p2', 'c', 2, { bad: 1 })),
        openEntry(r.profile('p3', 'c', 3, { email: 'e' })),
      ]);
      expect(labels(out)).toEqual(['p1:indexed', 'p2:dead-letter', 'p3:indexed']);
      expect(out[1]!.outcome).toMatchObject({
        errorClass: 'rejected',
        reason: expect.stringContaining('data.bad'),
      });
      // The merged update once, then one write per message.
      expect(callsOf(store)).toEqual([
        'mergeProfiles:c',
        'mergeProfiles:c',
        'mergeProfiles:c',
        'mergeProfiles:c',
      ]);
      expect(store.profiles.get('c')!.data).toEqual({ plan: 'pro', email: 'e' });
    });

    it('isolates every refused client side by side: k rounds for k updates, not k² (count the store calls)', () => {
      const r = recordFactory();
      const store = refusesBad();
      const k = 40;
      const batch: Entry[] = [];
      for (let i = 0; i < k; i++) {
        batch.push(openEntry(r.profile(`c${i}`, 'c', i + 1, i === 7 ? { bad: i } : { [`f${i}`]: i })));
        if (i < 3)
          batch.push(openEntry(r.profile(`d${i}`, 'd', i + 1, i === 0 ? { bad: 1 } : { [`g${i}`]: i })));
      }
      batch.push(openEntry(r.profile('e0', 'e', 1, { fine: true })));
      const out = write(store, batch);

      const dead = out.filter((e) => e.outcome?.kind === 'dead-letter').map((e) => e.message!.id);
      expect(dead.sort()).toEqual(['c7', 'd0']);
      expect(out.filter((e) => e.outcome?.kind === 'indexed')).toHaveLength(batch.length - 2);
      // One merged write for c, d and e; then round j writes the j-th update of each refused client.
      expect(store.calls).toHaveLength(1 + k);
      expect(store.calls[0]).toEqual({ op: 'mergeProfiles', clients: ['c', 'd', 'e'] });
      expect(store.calls.slice(1, 4).map((c) => ('clients' in c ? c.clients : []))).toEqual([
        ['c', 'd'],
        ['c', 'd'],
        ['c', 'd'],
      ]);
      const written = store.calls.reduce((n, c) => n + ('clients' in c ? c.clients.length : 0), 0);
      expect(written).toBe(3 + k + 3); // linear in the updates
      expect(Object.keys(store.profiles.get('c')!.data)).toHaveLength(k - 1);
      expect(store.profiles.get('d')!.data).toEqual({ g1: 1, g2: 2 });
    });

    it('dead-letters a refused client with a single update at once, without another round', () => {
      const r = recordFactory();
      const store = refusesBad();
      const out = write(store, [
        openEntry(r.profile('p1', 'c', 1, { bad: 1 })),
        openEntry(r.profile('q', 'd', 1, { ok: 1 })),
      ]);
      expect(labels(out)).toEqual(['p1:dead-letter', 'q:indexed']);
      expect(store.calls).toHaveLength(1);
    });

    it('decides an isolated update the stored profile outranks stale', () => {
      const r = recordFactory();
      const store = refusesBad();
      write(store, [openEntry(r.profile('p9', 'c', 9, { plan: 'pro' }))]);
      const out = write(store, [
        openEntry(r.profile('p1', 'c', 1, { plan: 'free' })),
        openEntry(r.profile('p10', 'c', 10, { bad: 1 })),
      ]);
      expect(labels(out)).toEqual(['p1:stale', 'p10:dead-letter']);
    });

    it('isolates before the tombstone that follows, and the tombstone still deletes', () => {
      const r = recordFactory();
      const store = refusesBad();
      const out = write(store, [
        openEntry(r.profile('p1', 'c', 1, { plan: 'pro' })),
        openEntry(r.profile('p2', 'c', 2, { bad: 1 })),
        deleteEntry(r.tombstone('c'), 'c'),
        openEntry(r.profile('p3', 'c', 3, { email: 'e' })),
      ]);
      expect(labels(out)).toEqual(['p1:indexed', 'p2:dead-letter', 'del(c):deleted', 'p3:indexed']);
      expect(callsOf(store)).toEqual([
        'mergeProfiles:c',
        'mergeProfiles:c',
        'mergeProfiles:c',
        'deleteProfiles:c',
        'mergeProfiles:c',
      ]);
      expect(store.profiles.get('c')!.data).toEqual({ email: 'e' });
    });
  });

  it('passes decided entries untouched, and a batch with nothing to write as it is, without a call', () => {
    const r = recordFactory();
    const store = new InMemoryDocumentStore();
    const dead = decide(openEntry(r.event('x', 'c')), {
      kind: 'dead-letter',
      errorClass: 'schema',
      reason: 'r',
    });
    const dup = decide(openEntry(r.profile('y', 'c', 1, {})), { kind: 'duplicate', by: 'window' });
    const batch = [dead, dup];
    expect(write(store, batch)).toBe(batch);
    expect(store.calls).toEqual([]);
    const mixed = write(store, [dead, openEntry(r.event('z', 'c'))]);
    expect(mixed[0]).toBe(dead);
    expect(mixed[1]!.outcome).toEqual({ kind: 'indexed' });
  });

  it('does not change the batch it was given', () => {
    const r = recordFactory();
    const batch = [openEntry(r.event('a', 'c'))];
    write(new InMemoryDocumentStore(), batch);
    expect(batch[0]!.outcome).toBeUndefined();
  });

  /** A store whose event writes take `frames[id]` frames; what started when is in `started`. */
  /** One batch per id, each a single event of client c. */
  const eventBatches = <Ids extends string[]>(...ids: Ids) => {
    const r = recordFactory();
    return ids.map((id) => [openEntry(r.event(id, 'c'))]) as { [K in keyof Ids]: Entry[] };
  };

  function slowStore(ts: TestScheduler, frames: Record<string, number>, started: [string, number][]) {
    const inner = new InMemoryDocumentStore();
    const store: DocumentStore = {
      createEvents: (events): Observable<EventWrite[]> => {
        started.push([events[0]!.id, ts.now()]);
        return inner.createEvents(events).pipe(delay(frames[events[0]!.id] ?? 1));
      },
      mergeProfiles: (u: readonly MergedUpdate[]) => inner.mergeProfiles(u),
      deleteProfiles: (c) => {
        started.push([`delete ${c.join(',')}`, ts.now()]);
        return inner.deleteProfiles(c).pipe(delay(1));
      },
    };
    return store;
  }

  it('writes one batch at a time by default, in order', () => {
    const [x, y, z] = eventBatches('a', 'b', 'c');
    const started: [string, number][] = [];
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const store = slowStore(ts, { a: 5 }, started);
      expectObservable(cold('xyz|', { x, y, z }).pipe(writeDocuments(store), map(labels))).toBe(
        '-----xy(z|)',
        {
          x: ['a:indexed'],
          y: ['b:indexed'],
          z: ['c:indexed'],
        },
      );
    });
    expect(started).toEqual([
      ['a', 0],
      ['b', 5],
      ['c', 6],
    ]);
  });

  it('joins the batches that wait while a write is busy, up to joinUpTo entries', () => {
    const [x, y, z, v] = eventBatches('a', 'b', 'c', 'd');
    const started: [string, number][] = [];
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const store = slowStore(ts, { a: 5 }, started);
      expectObservable(
        cold('xyzv|', { x, y, z, v }).pipe(
          writeDocuments(store, { joinUpTo: { entries: 2, bytes: 1024 * 1024 } }),
          map(labels),
        ),
      ).toBe('-----xw(u|)', {
        x: ['a:indexed'],
        w: ['b:indexed', 'c:indexed'],
        u: ['d:indexed'],
      });
    });
    // b and c went out as one request; d did not fit.
    expect(started).toEqual([
      ['a', 0],
      ['b', 5],
      ['d', 6],
    ]);
  });

  it("joins the batches that wait only while their records' bytes fit too", () => {
    // Each batch one event of about 100 bytes: two fit in 250 bytes, three do not.
    const [x, y, z, v, w] = eventBatches('a', 'b', 'c', 'd', 'e');
    const bytes = recordBytes(y[0]!.record.key, y[0]!.record.value);
    expect(bytes).toBeGreaterThan(250 / 3);
    expect(bytes).toBeLessThanOrEqual(125);
    const started: [string, number][] = [];
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const store = slowStore(ts, { a: 5 }, started);
      expectObservable(
        cold('xyzvw|', { x, y, z, v, w }).pipe(
          writeDocuments(store, { joinUpTo: { entries: 10, bytes: 250 } }),
          map(labels),
        ),
      ).toBe('-----xj(k|)', {
        x: ['a:indexed'],
        j: ['b:indexed', 'c:indexed'],
        k: ['d:indexed', 'e:indexed'],
      });
    });
    // b and c went out as one request, then d and e: ten entries would have fitted, 250 bytes not.
    expect(started).toEqual([
      ['a', 0],
      ['b', 5],
      ['d', 6],
    ]);
  });

  it('with batchesInFlight 2, writes two batches at a time, starting them in order; answers come as they are written', () => {
    const [x, y, z] = eventBatches('a', 'b', 'c');
    const started: [string, number][] = [];
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const store = slowStore(ts, { a: 5 }, started);
      expectObservable(
        cold('xyz|', { x, y, z }).pipe(writeDocuments(store, { batchesInFlight: 2 }), map(labels)),
      ).toBe('--yz-(x|)', {
        x: ['a:indexed'],
        y: ['b:indexed'],
        z: ['c:indexed'],
      });
    });
    // c waits for a free place: b's, at 2.
    expect(started).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]);
  });

  it('writes a batch with a tombstone alone: after every batch before it, before any after it', () => {
    const r = recordFactory();
    const x = [openEntry(r.event('a', 'c'))];
    const t = [deleteEntry(r.tombstone('c'), 'c')];
    const y = [openEntry(r.event('b', 'c'))];
    const started: [string, number][] = [];
    const ts = testScheduler();
    ts.run(({ cold, expectObservable }) => {
      const store = slowStore(ts, { a: 5 }, started);
      expectObservable(
        cold('xty|', { x, t, y }).pipe(writeDocuments(store, { batchesInFlight: 2 }), map(labels)),
      ).toBe('-----xt(y|)', {
        x: ['a:indexed'],
        t: ['del(c):deleted'],
        y: ['b:indexed'],
      });
    });
    expect(started).toEqual([
      ['a', 0],
      ['delete c', 5],
      ['b', 6],
    ]);
  });

  it('hands its abort signal to the store', () => {
    const r = recordFactory();
    const signal = new AbortController().signal;
    const seen: (AbortSignal | undefined)[] = [];
    const inner = new InMemoryDocumentStore();
    const store: DocumentStore = {
      createEvents: (e, s) => {
        seen.push(s);
        return inner.createEvents(e);
      },
      mergeProfiles: (u, s) => {
        seen.push(s);
        return inner.mergeProfiles(u);
      },
      deleteProfiles: (c, s) => {
        seen.push(s);
        return inner.deleteProfiles(c);
      },
    };
    of([
      openEntry(r.event('e', 'c')),
      openEntry(r.profile('p', 'c', 1, {})),
      deleteEntry(r.tombstone('c'), 'c'),
    ])
      .pipe(writeDocuments(store, { signal }))
      .subscribe();
    expect(seen).toEqual([signal, signal, signal]);
  });

  it('errors the result when the store fails (its transient failures are retried inside it)', () => {
    const r = recordFactory();
    testScheduler().run(({ cold, expectObservable }) => {
      const boom = new Error('unexpected answer');
      const inner = new InMemoryDocumentStore();
      const failing: DocumentStore = {
        createEvents: () => {
          throw boom;
        },
        mergeProfiles: (u) => inner.mergeProfiles(u),
        deleteProfiles: (c) => inner.deleteProfiles(c),
      };
      expectObservable(cold('x|', { x: [openEntry(r.event('a', 'c'))] }).pipe(writeDocuments(failing))).toBe(
        '#',
        undefined,
        boom,
      );
    });
  });
});
