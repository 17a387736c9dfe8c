import { describe, expect, it } from 'vitest';
import type { TombstonePolicy } from '../../../src/config/config.js';
import { canonicalJson } from '../../../src/tools/canonical.js';
import type { ReadBounds } from '../../../src/tools/reconcile/check-support.js';
import { EventsCheck, ProfilesCheck } from '../../../src/tools/reconcile/document-checks.js';
import { Expectation } from '../../../src/tools/reconcile/expectation.js';
import { DeadLettersCheck, TriggersCheck } from '../../../src/tools/reconcile/topic-checks.js';
import type { FetchedRecord } from '../../../src/tools/topic-reader.js';

const T = 'in';
const RULES = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'mail' }] as const;

const rec = (
  partition: number,
  offset: number,
  value: unknown,
  key: string | null = 'c-1',
  headers = {},
): FetchedRecord => ({
  topic: T,
  partition,
  offset: String(offset),
  key: key === null ? null : Buffer.from(key),
  value: value === null ? null : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
  headers,
  timestamp: 1_000,
});
const ev = (id: string, clientId = 'c-1', name = 'login', data: object = { n: 1 }) => ({
  id,
  clientId,
  type: 'event',
  name,
  ts: '2026-11-30T23:30:00.000Z',
  data,
});
const pr = (id: string, version: number, data: object, clientId = 'c-1') => ({
  id,
  clientId,
  type: 'profile',
  version,
  ts: '2026-11-30T12:00:00.000Z',
  data,
});
const doc = (e: ReturnType<typeof ev>, partition: number, offset: number) => ({
  clientId: e.clientId,
  name: e.name,
  ts: e.ts,
  data: e.data,
  origin: { topic: T, partition, offset },
});

function expectation(
  records: FetchedRecord[],
  { committed = 100n, tombstones = 'dead-letter' as TombstonePolicy, rejected = new Set<string>() } = {},
) {
  const c = new Map([
    [`${T}/0`, committed],
    [`${T}/1`, committed],
  ]);
  const exp = new Expectation({
    maxMessageBytes: 10_000,
    tombstones,
    rules: RULES as never,
    triggersTopic: 'triggers',
    committed: c,
    rejected,
  });
  for (const r of records) exp.add(r);
  const bounds: ReadBounds = { committed: c };
  return { exp, bounds };
}

describe('reconcile: events', () => {
  it('accepts the origin and body of any record carrying the id; finds missing, extra, different and misplaced ones', () => {
    const a = ev('a');
    const aCopy = ev('a'); // re-sent at another offset
    const b = ev('b');
    const c = ev('c');
    const { exp, bounds } = expectation(
      [rec(0, 1, a), rec(1, 5, aCopy), rec(0, 2, b), rec(1, 6, c), rec(0, 150, ev('p'))],
      {
        committed: 100n,
      },
    );
    expect(exp.counts).toMatchObject({ messages: 4, unique: 3, duplicates: 1, pending: 1 });
    const check = new EventsCheck(exp, 'ev-{yyyy.MM.dd}', bounds);
    check.doc('ev-2026.11.30', 'a', doc(aCopy, 1, 5)); // created by the copy: fine
    check.doc('ev-2026.11.30', 'b', { ...doc(b, 0, 2), data: { n: 2 } }); // body differs
    check.doc('ev-2026.12.01', 'c', doc(c, 1, 6)); // wrong day
    check.doc('ev-2026.11.30', 'x', doc(ev('x'), 0, 3)); // no record explains it
    check.doc('ev-2026.11.30', 'p', doc(ev('p'), 0, 150)); // past the committed offset: ahead
    check.finish();
    expect(check.found).toBe(3);
    expect(check.missing.items).toEqual([]);
    expect(check.different.items.map((d) => [d.id, d.why])).toEqual([
      ['b', 'body or origin (in/0/2) is not that of any record with this id'],
      ['c', 'in ev-2026.12.01, expected in ev-2026.11.30'],
    ]);
    expect(check.extra.items.map((d) => d.id)).toEqual(['x']);
    expect(check.ahead).toBe(1);
  });

  it('an origin pointing at a record that does not carry the id is different; a second document for an id is extra', () => {
    const { exp, bounds } = expectation([rec(0, 1, ev('a')), rec(0, 2, ev('b'))]);
    const check = new EventsCheck(exp, 'events', bounds);
    check.doc('events', 'a', doc(ev('a'), 0, 2));
    check.doc('events', 'b', doc(ev('b'), 0, 2));
    check.doc('events', 'b', doc(ev('b'), 0, 2));
    check.finish();
    expect(check.different.items.map((d) => d.id)).toEqual(['a']);
    expect(check.extra.count).toBe(1);
    expect(check.missing.count).toBe(0);
  });

  it('an event document without origin is a difference, and a deleted one is missing', () => {
    const { exp, bounds } = expectation([rec(0, 1, ev('a')), rec(0, 2, ev('b'))]);
    const check = new EventsCheck(exp, 'events', bounds);
    const { origin: _, ...noOrigin } = doc(ev('a'), 0, 1);
    check.doc('events', 'a', noOrigin);
    check.finish();
    expect(check.different.items).toEqual([
      { id: 'a', index: 'events', why: 'no origin {topic, partition, offset}' },
    ]);
    expect(check.missing.items).toEqual(['b']);
  });
});

describe('reconcile: profiles', () => {
  const updates = [
    rec(0, 1, pr('u1', 1, { plan: 'free', city: 'Oslo' })),
    rec(0, 2, pr('u3', 3, { plan: 'pro' })),
    rec(0, 3, pr('u2', 2, { plan: 'team', city: 'Rome' })), // late: plan outranked, city wins
    rec(0, 4, pr('u2', 2, { plan: 'team', city: 'Rome' })), // duplicate
  ];
  const good = {
    clientId: 'c-1',
    version: 3,
    data: { plan: 'pro', city: 'Rome' },
    fieldVersions: { plan: { version: 3, id: 'u3' }, city: { version: 2, id: 'u2' } },
  };

  it('stale does not depend on the order the partitions are read in: a client in several partitions is judged per partition', () => {
    const p0 = [rec(0, 1, pr('u1', 1, { plan: 'free' })), rec(0, 2, pr('u4', 4, { city: 'Oslo' }))];
    const p1 = [
      rec(1, 1, pr('u2', 2, { plan: 'pro' })),
      rec(1, 2, pr('u0', 0, { plan: 'old' })), // late within its partition: stale in any order
    ];
    const orders = [
      [...p0, ...p1],
      [...p1, ...p0],
      [p1[0]!, p0[0]!, p1[1]!, p0[1]!],
      [p0[0]!, p1[0]!, p0[1]!, p1[1]!],
    ];
    for (const order of orders) {
      const { exp } = expectation(order);
      expect(exp.counts.stale, order.map((r) => `${r.partition}:${r.offset}`).join(' ')).toBe(1);
      // The merge itself is order-independent as ever.
      expect(exp.clients.get('c-1')?.version).toBe(4);
      expect(exp.clients.get('c-1')?.fields.get('plan')?.stamp).toEqual({ version: 2, id: 'u2' });
    }
    // One partition: judged in offset order, as before.
    expect(expectation([p1[0]!, rec(1, 3, pr('u1', 1, { plan: 'free' }))]).exp.counts.stale).toBe(1);
  });

  it('the per-field (version, id) merge; a rewound field is reported with expected and found value and version', () => {
    const { exp } = expectation(updates);
    expect(exp.counts.duplicates).toBe(1);
    expect(exp.counts.stale).toBe(0); // u2 came late but its city won
    expect(expectation([...updates, rec(0, 5, pr('u0', 1, { plan: 'x' }))]).exp.counts.stale).toBe(1);
    const ok = new ProfilesCheck(exp, false);
    ok.doc('c-1', good);
    ok.finish();
    expect(ok.different.count + ok.missing.count + ok.extra.count).toBe(0);

    const bad = new ProfilesCheck(expectation(updates).exp, false);
    bad.doc('c-1', {
      ...good,
      data: { ...good.data, plan: 'free' },
      fieldVersions: { ...good.fieldVersions, plan: { version: 1, id: 'u1' } },
    });
    expect(bad.different.items).toEqual([
      {
        clientId: 'c-1',
        field: 'plan',
        expected: { value: 'pro', version: 3, id: 'u3' },
        found: { value: 'free', version: 1, id: 'u1' },
      },
    ]);
  });

  it('a wrong version, an extra field, a missing profile and one nobody wrote', () => {
    const { exp } = expectation([...updates, rec(1, 1, pr('v1', 1, { a: 1 }, 'c-2'), 'c-2')]);
    const check = new ProfilesCheck(exp, false);
    check.doc('c-1', { ...good, version: 4, data: { ...good.data, extra: 1 } });
    check.doc('c-9', { clientId: 'c-9', version: 1, data: {}, fieldVersions: {} });
    check.finish();
    expect(check.different.items.map((d) => d.field ?? 'version')).toEqual(['version', 'extra']);
    expect(check.missing.items).toEqual(['c-2']);
    expect(check.extra.items).toEqual(['c-9']);
  });

  it('TOMBSTONES=delete: a profile deleted in its partition is expected gone, or rebuilt by later updates only', () => {
    const { exp } = expectation(
      [
        rec(0, 1, pr('u1', 1, { a: 1 })),
        rec(0, 2, null),
        rec(1, 3, pr('w1', 1, { a: 1 }, 'c-2'), 'c-2'),
        rec(1, 4, null, 'c-2'),
        rec(1, 5, pr('w2', 1, { b: 2 }, 'c-2'), 'c-2'),
      ],
      { tombstones: 'delete' },
    );
    expect(exp.counts.deletes).toBe(2);
    const check = new ProfilesCheck(exp, false);
    check.doc('c-1', {
      clientId: 'c-1',
      version: 1,
      data: { a: 1 },
      fieldVersions: { a: { version: 1, id: 'u1' } },
    });
    check.doc('c-2', {
      clientId: 'c-2',
      version: 1,
      data: { b: 2 },
      fieldVersions: { b: { version: 1, id: 'w2' } },
    });
    check.finish();
    expect(check.extra.items).toEqual(['c-1']);
    expect(check.different.count).toBe(0);
  });

  it('a delete for a client whose updates come through several partitions cannot be checked (order-dependent)', () => {
    const { exp } = expectation(
      [rec(0, 1, pr('u1', 1, { a: 1 })), rec(1, 1, pr('u2', 2, { a: 2 }), 'c-1#x'), rec(0, 2, null)],
      {
        tombstones: 'delete',
      },
    );
    const check = new ProfilesCheck(exp, false);
    check.doc('c-1', {
      clientId: 'c-1',
      version: 2,
      data: { a: 2 },
      fieldVersions: { a: { version: 2, id: 'u2' } },
    });
    check.finish();
    expect(check.uncheckable).toBe(1);
    expect(check.different.count + check.extra.count + check.missing.count).toBe(0);
  });

  it('TOMBSTONES=ignore counts them; dead-letter expects class tombstone', () => {
    expect(expectation([rec(0, 1, null)], { tombstones: 'ignore' }).exp.counts.tombstonesIgnored).toBe(1);
    expect([...expectation([rec(0, 1, null)]).exp.poison]).toEqual([['in/0/1', 'tombstone']]);
  });
});

describe('reconcile: triggers and dead letters', () => {
  it('each matching unique event once, with its value and key; duplicates, unexpected and missing ones found', () => {
    const { exp } = expectation([
      rec(0, 1, ev('s1', 'c-1', 'signup')),
      rec(0, 2, ev('s2', 'c-1', 'signup')),
      rec(0, 3, ev('s1', 'c-1', 'signup')),
    ]);
    expect([...exp.triggers.keys()]).toEqual(['s1:welcome', 's2:welcome']);
    const t = new TriggersCheck(exp, false);
    const value = (id: string) =>
      Buffer.from(
        JSON.stringify({
          id: `${id}:welcome`,
          rule: 'welcome',
          trigger: 'mail',
          clientId: 'c-1',
          sourceId: id,
          ts: '2026-11-30T23:30:00.000Z',
        }),
      );
    t.record(Buffer.from('c-1'), value('s1'));
    t.record(Buffer.from('c-1'), value('s1'));
    t.record(Buffer.from('c-1'), value('zz'));
    t.finish();
    expect(t.duplicate.items).toEqual([{ id: 's1:welcome', times: 2 }]);
    expect(t.missing.items).toEqual(['s2:welcome']);
    expect(t.unexpected.items.map((u) => u.id)).toEqual(['zz:welcome']);
  });

  it('every poison record once with its class; a replayed dead letter is not unexpected', () => {
    const { exp, bounds } = expectation([
      rec(0, 1, '{not json'),
      rec(0, 2, { id: 'x' }),
      rec(0, 3, '{also not'),
      rec(1, 1, ev('ok')), // valid now: its old dead letter was replayed
      rec(1, 2, ev('ok2')), // valid now, dead-lettered, never replayed
      rec(1, 3, ev('ok'), 'c-1', { 'x-replay-of': 'dlq/0/9' }),
    ]);
    const dlq = new DeadLettersCheck('dlq');
    const h = (topic: string, p: number, o: number, cls: string) => ({
      'x-source-topic': topic,
      'x-source-partition': String(p),
      'x-source-offset': String(o),
      'x-error-class': cls,
    });
    dlq.deadLetter(0, '1', h(T, 0, 1, 'invalid-json'));
    dlq.deadLetter(0, '2', h(T, 0, 1, 'invalid-json'));
    dlq.deadLetter(0, '3', h(T, 0, 2, 'invalid-json'));
    dlq.deadLetter(0, '9', h(T, 1, 1, 'too-large'));
    dlq.deadLetter(1, '0', h(T, 1, 2, 'too-large'));
    dlq.compare(exp, bounds);
    expect(dlq.duplicate.items).toEqual([{ source: 'in/0/1', at: ['0:1', '0:2'] }]);
    expect(dlq.differentClass.items).toEqual([
      { source: 'in/0/2', expected: 'schema', found: 'invalid-json' },
    ]);
    expect(dlq.missing.items).toEqual([{ source: 'in/0/3', cls: 'invalid-json' }]);
    expect(dlq.replayed).toBe(1);
    expect(dlq.unexpected.items.map((u) => u.source)).toEqual(['in/1/2']);
  });

  it('a record Elasticsearch rejected (DLQ class rejected) is a dead letter, not a missing event', () => {
    const { exp, bounds } = expectation([rec(0, 1, ev('r'))], { rejected: new Set(['in/0/1']) });
    const events = new EventsCheck(exp, 'events', bounds);
    events.finish();
    expect(events.missing.count).toBe(0);
    expect([...exp.poison]).toEqual([['in/0/1', 'rejected']]);
  });
});

describe('reconcile: hostile keys', () => {
  it('documents with __proto__, constructor and prototype keys are compared as data and reach no prototype', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const { exp } = expectation([rec(0, 1, pr('u1', 1, { plan: 'pro' }))]);
    const check = new ProfilesCheck(exp, false);
    const hostile = JSON.parse(
      '{"clientId":"c-1","version":1,"data":{"plan":"pro","__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}}},' +
        '"fieldVersions":{"plan":{"version":1,"id":"u1"},"__proto__":{"version":9,"id":"z"}}}',
    );
    check.doc('c-1', hostile);
    check.finish();
    expect(check.different.items.map((d) => d.field)).toEqual(['__proto__', 'constructor']);
    expect(canonicalJson(hostile.data)).toBe(
      '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"plan":"pro"}',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
  });

  // Contract: such keys are ordinary fields.
  it('a profile update that sets __proto__ and prototype is merged as fields, and Object.prototype stays untouched', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const { exp } = expectation([
      rec(
        0,
        1,
        '{"id":"u1","clientId":"c-1","type":"profile","version":1,"ts":"2026-11-30T12:00:00Z","data":{"__proto__":{"polluted":1},"prototype":2}}',
      ),
    ]);
    expect(exp.counts.poison).toBe(0);
    const check = new ProfilesCheck(exp, false);
    check.doc(
      'c-1',
      JSON.parse(
        '{"clientId":"c-1","version":1,"data":{"__proto__":{"polluted":1},"prototype":2},"fieldVersions":{"__proto__":{"version":1,"id":"u1"},"prototype":{"version":1,"id":"u1"}}}',
      ),
    );
    check.finish();
    expect(check.different.count + check.missing.count).toBe(0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
  });
});

describe('reconcile --since', () => {
  it('skips older records; a profile field must not be older than the read records imply; unexplained output is not judged', () => {
    const c = new Map([[`${T}/0`, 100n]]);
    const exp = new Expectation({
      maxMessageBytes: 10_000,
      tombstones: 'dead-letter',
      rules: [],
      triggersTopic: 'triggers',
      committed: c,
      rejected: new Set(),
      sinceMs: 5_000,
    });
    exp.add({ ...rec(0, 1, pr('old', 9, { plan: 'gold' })), timestamp: 4_999 });
    exp.add({ ...rec(0, 2, pr('new', 2, { plan: 'pro' })), timestamp: 5_000 });
    exp.add({ ...rec(0, 3, ev('e')), timestamp: 6_000 });
    expect(exp.counts).toMatchObject({ messages: 2, skippedBeforeSince: 1 });

    // The stored field came from the unread, newer update: fine with --since.
    const profiles = new ProfilesCheck(exp, true);
    profiles.doc('c-1', {
      clientId: 'c-1',
      version: 9,
      data: { plan: 'gold', city: 'x' },
      fieldVersions: { plan: { version: 9, id: 'old' } },
    });
    profiles.finish();
    expect(profiles.different.count).toBe(0);
    // But one older than a read update is a difference.
    const older = new ProfilesCheck(exp, true);
    older.doc('c-1', {
      clientId: 'c-1',
      version: 2,
      data: { plan: 'free' },
      fieldVersions: { plan: { version: 1, id: 'a' } },
    });
    expect(older.different.items.map((d) => d.field)).toEqual(['plan']);

    const bounds: ReadBounds = { committed: c, sinceStart: new Map([[`${T}/0`, 2n]]) };
    const events = new EventsCheck(exp, 'events', bounds);
    events.doc('events', 'before', doc(ev('before'), 0, 1)); // from before --since: not judged
    events.doc('events', 'e', doc(ev('e'), 0, 3));
    events.finish();
    expect(events.notJudged).toBe(1);
    expect(events.extra.count + events.different.count + events.missing.count).toBe(0);
  });
});
