import {
  asyncScheduler,
  concat,
  concatMap,
  from,
  ignoreElements,
  map,
  type Observable,
  throwError,
  timer,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { GraphSettings, TriggerRule } from '../../../src/config/config.js';
import { ingestPartition } from '../../../src/graph/partition-graph.js';
import type { IngestMessage, RawRecord } from '../../../src/model/message.js';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import type { OutRecord } from '../../../src/model/out-record.js';
import type { Done, OutcomeKind } from '../../../src/model/outcome.js';
import type { Commit } from '../../../src/operators/commit-in-order.js';
import { type Enrich, identityEnrich } from '../../../src/operators/enrich-in-order.js';
import { UNCOMMITTED_PER_HIGH_WATER as k } from '../../../src/pushback/intake/marks.js';
import { recordFactory, TS, testRetryPolicy, testSettings } from '../../support/data/records.js';
import {
  InMemoryCommitSink,
  InMemoryDocumentStore,
  type InMemoryDocumentStoreOptions,
  InMemoryKnownCopies,
} from '../../support/fakes/in-memory-ports.js';

const rules: TriggerRule[] = [
  { id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' },
];
const topics = { triggers: 'ingest.triggers', dlq: 'ingest.dlq' };

/**
 * The outside world of one partition that outlives a worker: Elasticsearch, Redis and Kafka's
 * committed state. A "run" is one worker's graph over it, with a fresh tracker.
 */
function world(documents = new InMemoryDocumentStore()) {
  return { known: new InMemoryKnownCopies(), documents, commits: new InMemoryCommitSink() };
}
type World = ReturnType<typeof world>;

interface RunOptions {
  readonly settings?: Partial<GraphSettings>;
  readonly enrich?: Enrich;
  readonly replayedBelow?: string;
  /** Frames between records (default 1). */
  readonly spacing?: number;
  /** Frames the source stays open after its last record (default 0: it completes at once). */
  readonly open?: number;
}

interface RunResult {
  /** What the graph emitted: durable commits, with the virtual time of each. */
  readonly emitted: { at: number; commit: Commit }[];
  /** Every finished record, with the virtual time it was seen. */
  readonly done: { at: number; d: Done }[];
  readonly outcomes: Map<string, OutcomeKind>;
  readonly error: unknown;
  readonly completed: boolean;
  readonly tracker: OffsetTracker<OutRecord>;
}

/** One worker's graph over `records`, in virtual time, to the end. */
function run(w: World, records: readonly RawRecord[], options: RunOptions = {}): RunResult {
  const tracker = new OffsetTracker<OutRecord>();
  const emitted: { at: number; commit: Commit }[] = [];
  const done: { at: number; d: Done }[] = [];
  let error: unknown;
  let completed = false;
  const ts = new TestScheduler((a, e) => expect(a).toEqual(e));
  ts.run(({ flush }) => {
    const spacing = options.spacing ?? 1;
    const source$: Observable<RawRecord> = concat(
      from(records).pipe(concatMap((r) => timer(spacing).pipe(map(() => r)))),
      timer(options.open ?? 0).pipe(ignoreElements()),
    );
    ingestPartition(
      source$,
      {
        known: w.known,
        documents: w.documents,
        commits: w.commits,
        enrich: options.enrich ?? identityEnrich,
      },
      {
        settings: testSettings(options.settings),
        rules,
        topics,
        tracker,
        retry: testRetryPolicy(10, 100),
        ...(options.replayedBelow !== undefined ? { replayedBelow: options.replayedBelow } : {}),
        onDone: (batch) => {
          for (const d of batch) done.push({ at: ts.now(), d });
        },
      },
    ).subscribe({
      next: (commit) => emitted.push({ at: ts.now(), commit }),
      error: (err) => {
        error = err;
      },
      complete: () => {
        completed = true;
      },
    });
    flush();
  });
  const outcomes = new Map(done.map(({ d }) => [d.entry.record.offset, d.entry.outcome.kind]));
  return { emitted, done, outcomes, error, completed, tracker };
}

/** The trigger ids (`<sourceId>:<ruleId>`) published by durable commits, in order. */
const triggerIds = (w: World) =>
  w.commits.recordsOf(topics.triggers).map((t) => JSON.parse(String(t.value)).id);
const dlqClasses = (w: World) => w.commits.recordsOf(topics.dlq).map((r) => r.headers?.['x-error-class']);

describe('ingestPartition (whole graph, in-memory sinks, virtual time)', () => {
  it('keeps per-client order through a slow enrich and never commits past unfinished work', () => {
    const w = world();
    const r = recordFactory();
    // Client a's enrich takes 30 ms, client b's 5 ms: b overtakes a, but each client stays in order.
    const records = [
      r.event('e1', 'a'),
      r.event('e2', 'b'),
      r.event('e3', 'a'),
      r.event('e4', 'b'),
      r.event('e5', 'a', 'signup'),
    ];
    const starts: { at: number; clientId: string; id: string }[] = [];
    const result = run(w, records, {
      settings: { batchMax: 2, batchMs: 50, commitIntervalMs: 20 },
      open: 500,
      enrich: (m: IngestMessage) => {
        // Inside TestScheduler.run the async scheduler's clock is virtual.
        starts.push({ at: asyncScheduler.now(), clientId: m.clientId, id: m.id });
        return timer(m.clientId === 'a' ? 30 : 5).pipe(map(() => m));
      },
    });
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);

    // Records arrive at 1..5. Enrich: b's e2 2→7, e4 7→12; a's e1 1→31, e3 31→61, e5 61→91.
    // Batches (2 or 50 ms): [e2 e4] at 12 (offsets 1, 3: blocked by 0), [e1 e3] at 61 (0..3
    // done), [e5] at 91 + 50 = 141. A commit 20 ms after the offset moves: '4' at 81, '5' at 161.
    expect(result.emitted.map(({ at, commit }) => [at, commit.offset])).toEqual([
      [81, '4'],
      [161, '5'],
    ]);

    // Per-client order: each client's messages were enriched one after another, in offset order.
    expect(starts.map((x) => [x.at, x.id])).toEqual([
      [1, 'e1'],
      [2, 'e2'],
      [7, 'e4'],
      [31, 'e3'],
      [61, 'e5'],
    ]);
    // b overtook a: b's records finished before a's first one.
    const doneAt = (offset: string) => result.done.find((x) => x.d.entry.record.offset === offset)!.at;
    expect(doneAt('3')).toBeLessThan(doneAt('0'));

    // Commit order: every commit passes only offsets that were done when it was made.
    for (const { at, commit } of result.emitted) {
      const passed = result.done.filter((x) => BigInt(x.d.entry.record.offset) < BigInt(commit.offset));
      expect(passed).toHaveLength(Number(commit.offset));
      expect(passed.every((x) => x.at <= at)).toBe(true);
    }
    expect(w.commits.lastOffset).toBe('5');
    expect([...w.documents.events.keys()].sort()).toEqual(['e1', 'e2', 'e3', 'e4', 'e5']);
    // The signup event triggered exactly once, in the commit that passed its offset.
    expect(w.commits.commits.map((c) => c.records.length)).toEqual([0, 1]);
    expect(JSON.parse(String(w.commits.recordsOf(topics.triggers)[0]!.value))).toEqual({
      id: 'e5:welcome',
      rule: 'welcome',
      trigger: 'send-welcome-email',
      clientId: 'a',
      sourceId: 'e5',
      ts: TS,
    });
    expect(result.tracker.unfinished).toBe(0);
  });

  it('dead-letters poison, drops re-sent ids, merges profiles, and commits everything', () => {
    const w = world();
    const r = recordFactory();
    const records = [
      r.profile('p1', 'c', 2, { plan: 'pro', email: 'new@x' }),
      r.raw('{not json', 'c'),
      r.profile('p0', 'c', 1, { plan: 'free', locale: 'fr' }), // older: loses plan and email, wins locale
      r.event('e1', 'c', 'signup'),
      r.event('e1', 'c', 'signup'), // re-sent copy within the window
      r.raw(JSON.stringify({ id: 'x', clientId: 'c', type: 'event', ts: 'yesterday', name: 'n', data: {} })),
    ];
    const result = run(w, records);
    expect(result.completed).toBe(true);
    expect(Object.fromEntries(result.outcomes)).toEqual({
      0: 'indexed',
      1: 'dead-letter',
      2: 'indexed',
      3: 'indexed',
      4: 'duplicate',
      5: 'dead-letter',
    });
    expect(result.done.find((x) => x.d.entry.record.offset === '4')!.d.entry.outcome).toEqual({
      kind: 'duplicate',
      by: 'window',
    });
    expect(w.documents.profiles.get('c')).toMatchObject({
      version: 2,
      data: { plan: 'pro', email: 'new@x', locale: 'fr' },
    });
    // The window copy never reached Elasticsearch.
    expect(
      w.documents.calls.filter((c) => c.op === 'createEvents').flatMap((c) => ('ids' in c ? c.ids : [])),
    ).toEqual(['e1']);
    const dlq = w.commits.recordsOf(topics.dlq);
    expect(dlq.map((x) => x.headers?.['x-error-class'])).toEqual(['invalid-json', 'schema']);
    expect(dlq[0]!.value).toEqual(Buffer.from('{not json'));
    expect(dlq[1]!.headers).toMatchObject({ 'x-source-offset': '5', 'x-source-partition': '0' });
    expect(triggerIds(w)).toEqual(['e1:welcome']);
    expect(w.commits.lastOffset).toBe('6');
  });

  it('decides a copy re-sent after the window by Elasticsearch’s origin, and it triggers nothing', () => {
    const w = world();
    const r = recordFactory();
    const result = run(w, [r.event('e1', 'c', 'signup'), r.event('e1', 'c', 'signup')], {
      settings: { dedupWindowMs: 50 },
      spacing: 200,
    });
    expect(result.done.map(({ d }) => d.entry.outcome)).toEqual([
      { kind: 'indexed' },
      { kind: 'duplicate', by: 'ingest.events/0/0' },
    ]);
    expect(triggerIds(w)).toEqual(['e1:welcome']);
  });

  describe('exactly-once triggers across a crash and a replay', () => {
    it('a crash before the commit: the replay (same origin) triggers in the new commit, once in all', () => {
      const w = world();
      const r = recordFactory();
      const records = [
        r.event('e1', 'c', 'signup'),
        r.profile('p1', 'c', 1, { plan: 'pro' }),
        r.event('e2', 'd', 'signup'),
      ];

      // Run 1: written to Elasticsearch and Redis, then the commit fails (the worker dies).
      w.commits.failNext(new Error('killed before the commit'));
      const first = run(w, records);
      expect(first.error).toBeInstanceOf(Error);
      expect(w.commits.commits).toEqual([]);
      expect(w.documents.ownerOf('e1')).toBe('ingest.events/0/0');
      expect(w.known.marks.get('e2')).toBe('ingest.events/0/2');

      // Run 2 reads the same records again from the committed offset (none): both events are
      // this record's own (same origin, in Elasticsearch and in Redis), so they trigger now.
      const second = run(w, records);
      expect(second.completed).toBe(true);
      // (The profile update is stored already: merging it again changes nothing.)
      expect(Object.fromEntries(second.outcomes)).toEqual({ 0: 'indexed', 1: 'stale', 2: 'indexed' });
      expect(triggerIds(w)).toEqual(['e1:welcome', 'e2:welcome']);
      expect(w.commits.lastOffset).toBe('3');
    });

    it('a copy from another record (another origin) triggers nothing, whether Redis remembers or not', () => {
      const w = world();
      const r = recordFactory();
      run(w, [r.event('e1', 'c', 'signup')]);
      expect(triggerIds(w)).toEqual(['e1:welcome']);

      // A later copy (another offset): Redis knows the owner, so Elasticsearch is not even asked.
      r.skip(10);
      const creates = () => w.documents.calls.filter((c) => c.op === 'createEvents').length;
      const before = creates();
      const copy = run(w, [r.event('e1', 'c', 'signup')]);
      expect([...copy.outcomes.values()]).toEqual(['duplicate']);
      expect(creates()).toBe(before);

      // Redis flushed (or down): Elasticsearch's origin still says it is another record's.
      w.known.flush();
      const again = run(w, [r.event('e1', 'c', 'signup')]);
      expect(again.done[0]!.d.entry.outcome).toEqual({ kind: 'duplicate', by: 'ingest.events/0/0' });
      w.known.available = false;
      const down = run(w, [r.event('e1', 'c', 'signup')]);
      expect([...down.outcomes.values()]).toEqual(['duplicate']);

      expect(triggerIds(w)).toEqual(['e1:welcome']);
    });

    it('a rebuild (indices deleted, offsets reset) recreates every document and sends nothing again', () => {
      const w = world();
      const r = recordFactory();
      const records = [
        r.event('e1', 'c', 'signup'),
        r.raw('{not json', 'c'),
        r.profile('p1', 'c', 1, { plan: 'pro' }),
        r.event('e2', 'd', 'signup'),
      ];
      run(w, records);
      expect(triggerIds(w)).toEqual(['e1:welcome', 'e2:welcome']);
      expect(dlqClasses(w)).toEqual(['invalid-json']);
      const highest = w.commits.lastOffset!;

      // Rebuild: new indices, Redis flushed, group offsets reset to 0; the ledger says how far
      // work was committed before. A record never committed before (e3) still triggers.
      const rebuilt: World = {
        ...w,
        documents: new InMemoryDocumentStore(),
        known: new InMemoryKnownCopies(),
      };
      const before = w.commits.commits.length;
      const replay = run(rebuilt, [...records, r.event('e3', 'e', 'signup')], { replayedBelow: highest });
      expect(replay.completed).toBe(true);
      expect([...rebuilt.documents.events.keys()].sort()).toEqual(['e1', 'e2', 'e3']);
      expect(rebuilt.documents.profiles.get('c')!.data).toEqual({ plan: 'pro' });
      const republished = w.commits.commits.slice(before).flatMap((c) => c.records);
      expect(republished.map((x) => JSON.parse(String(x.value)).id)).toEqual(['e3:welcome']);
      expect(w.commits.lastOffset).toBe('5');
    });
  });

  describe('tombstones', () => {
    const tombstoneRun = (tombstones: GraphSettings['tombstones'], settings: Partial<GraphSettings> = {}) => {
      const w = world();
      const r = recordFactory();
      const records = [
        r.profile('p1', 'c', 1, { plan: 'pro' }),
        r.tombstone('c'),
        r.profile('p2', 'c', 2, { email: 'e@x' }),
      ];
      return { w, result: run(w, records, { settings: { tombstones, ...settings } }) };
    };

    it('TOMBSTONES=delete deletes the profile in its place in the client’s order (one batch)', () => {
      const { w, result } = tombstoneRun('delete');
      expect(Object.fromEntries(result.outcomes)).toEqual({ 0: 'indexed', 1: 'deleted', 2: 'indexed' });
      expect(w.documents.profiles.get('c')).toMatchObject({ version: 2, data: { email: 'e@x' } });
      expect(w.commits.records).toEqual([]);
      expect(w.commits.lastOffset).toBe('3');
    });

    it('TOMBSTONES=delete deletes the profile in its place in the client’s order (a batch each)', () => {
      const { w, result } = tombstoneRun('delete', { batchMax: 1 });
      expect(Object.fromEntries(result.outcomes)).toEqual({ 0: 'indexed', 1: 'deleted', 2: 'indexed' });
      expect(w.documents.profiles.get('c')).toMatchObject({ version: 2, data: { email: 'e@x' } });
    });

    it('TOMBSTONES=dead-letter dead-letters it (class tombstone, null value) and keeps the profile', () => {
      const { w, result } = tombstoneRun('dead-letter');
      expect(result.outcomes.get('1')).toBe('dead-letter');
      const [dlq] = w.commits.recordsOf(topics.dlq);
      expect(dlq).toMatchObject({
        key: Buffer.from('c'),
        value: null,
        headers: { 'x-error-class': 'tombstone' },
      });
      expect(w.documents.profiles.get('c')!.data).toEqual({ plan: 'pro', email: 'e@x' });
      expect(w.commits.lastOffset).toBe('3');
    });

    it('TOMBSTONES=ignore counts it ignored, publishes nothing and commits past it', () => {
      const { w, result } = tombstoneRun('ignore');
      expect(result.outcomes.get('1')).toBe('ignored');
      expect(w.commits.records).toEqual([]);
      expect(w.documents.profiles.get('c')!.data).toEqual({ plan: 'pro', email: 'e@x' });
      expect(w.commits.lastOffset).toBe('3');
    });
  });

  it('stores keys such as __proto__ as data, in profiles, events and client ids, and never touches a prototype', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const w = world();
    const r = recordFactory();
    const profile = (id: string, clientId: string, version: number, data: string) =>
      r.raw(
        `{"id":"${id}","clientId":"${clientId}","type":"profile","version":${version},"ts":"${TS}","data":${data}}`,
        clientId,
      );
    const records = [
      profile('h1', 'c', 1, '{"__proto__":{"isAdmin":true},"plan":"pro"}'),
      profile('h2', 'c', 2, '{"constructor":{"prototype":{"polluted":true}},"meta":{"__proto__":{"x":1}}}'),
      profile('h3', 'c', 3, '{"__proto__":{"isAdmin":false},"prototype":1}'),
      profile('h4', '__proto__', 1, '{"plan":"free"}'),
      profile('h5', 'constructor', 1, '{"toString":1,"hasOwnProperty":2}'),
      r.raw(
        `{"id":"__proto__","clientId":"c","type":"event","name":"signup","ts":"${TS}","data":{"__proto__":{"polluted":true},"items":[{"constructor":{"prototype":{"polluted":true}}}]}}`,
        'c',
      ),
    ];
    const result = run(w, records, { settings: { batchMax: 2 } });
    expect(result.completed).toBe(true);
    expect([...result.outcomes.values()]).toEqual(Array(6).fill('indexed'));

    const c = w.documents.profiles.get('c')!;
    expect(Object.keys(c.data).sort()).toEqual(['__proto__', 'constructor', 'meta', 'plan', 'prototype']);
    expect(Object.getOwnPropertyDescriptor(c.data, '__proto__')!.value).toEqual({ isAdmin: false });
    expect(JSON.stringify(c.data.meta)).toBe('{"__proto__":{"x":1}}');
    expect(w.documents.profiles.get('__proto__')!.data).toEqual({ plan: 'free' });
    expect(Object.keys(w.documents.profiles.get('constructor')!.data).sort()).toEqual([
      'hasOwnProperty',
      'toString',
    ]);
    const event = w.documents.events.get('__proto__')!;
    expect(Object.keys(event.data)).toEqual(['__proto__', 'items']);
    expect(triggerIds(w)).toEqual(['__proto__:welcome']);

    // Nothing reached a prototype, in the graph or in the stores.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
    const probe = {} as Record<string, unknown>;
    expect([probe.isAdmin, probe.polluted, probe.x, probe.plan]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(Object.getPrototypeOf(probe)).toBe(Object.prototype);
    expect(typeof probe.toString).toBe('function');
  });

  it('commits past gaps (transaction markers, aborted records) to the partition’s end', () => {
    const w = world();
    const r = recordFactory();
    const records = [r.event('e1', 'c'), r.gap(3), r.event('e2', 'c'), r.gap(2)]; // 0, 1..3, 4, 5..6
    const result = run(w, records);
    expect(Object.fromEntries(result.outcomes)).toEqual({
      0: 'indexed',
      3: 'skipped',
      4: 'indexed',
      6: 'skipped',
    });
    expect(w.commits.lastOffset).toBe('7');
    expect(w.commits.records).toEqual([]);
  });

  it('commits a partition of only gaps', () => {
    const w = world();
    const r = recordFactory();
    r.at(100);
    run(w, [r.gap(5)]);
    expect(w.commits.lastOffset).toBe('105');
  });

  it('retries a transient enrich failure with the retry policy, in virtual time, and dead-letters nothing', () => {
    const w = world();
    const r = recordFactory();
    const attempts: number[] = [];
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const result = run(w, [r.event('e1', 'c', 'signup'), r.event('e2', 'd')], {
      enrich: (m) => {
        if (m.id !== 'e1') return m;
        attempts.push(asyncScheduler.now());
        return attempts.length <= 3 ? throwError(() => refused) : [m];
      },
    });
    // e1 arrives at 1 and is retried after 10, 20 and 40 ms (no jitter in the test policy).
    expect(attempts).toEqual([1, 11, 31, 71]);
    expect([...result.outcomes.values()].sort()).toEqual(['indexed', 'indexed']);
    expect(dlqClasses(w)).toEqual([]);
    expect(triggerIds(w)).toEqual(['e1:welcome']);
    expect(w.commits.lastOffset).toBe('2');
  });

  it('dead-letters what enrich rejects and what Elasticsearch refuses (class rejected), and ingests the rest', () => {
    const options: InMemoryDocumentStoreOptions = {
      refuseProfile: (doc) =>
        typeof doc.data.age === 'string'
          ? 'Elasticsearch 400 document_parsing_exception: [data.age]'
          : undefined,
    };
    const w = world(new InMemoryDocumentStore(options));
    const r = recordFactory();
    const records = [
      r.profile('p1', 'c', 1, { age: 30 }),
      r.profile('p2', 'c', 2, { age: 'thirty' }),
      r.profile('p3', 'c', 3, { plan: 'pro' }),
      r.event('e1', 'd', 'login', { reject: true }),
    ];
    const result = run(w, records, {
      enrich: (m) => {
        if (m.data.reject === true) throw Object.assign(new Error('unknown customer'), { badData: true });
        return m;
      },
    });
    expect(Object.fromEntries(result.outcomes)).toEqual({
      0: 'indexed',
      1: 'dead-letter',
      2: 'indexed',
      3: 'dead-letter',
    });
    expect(dlqClasses(w)).toEqual(['rejected', 'rejected']);
    expect(w.commits.recordsOf(topics.dlq)[1]!.headers?.['x-error-message']).toBe(
      'enrich failed: unknown customer',
    );
    expect(w.documents.profiles.get('c')!.data).toEqual({ age: 30, plan: 'pro' });
    expect(w.commits.lastOffset).toBe('4');
  });

  it('gives the same end state with Redis away as with it (Redis only saves work)', () => {
    const r = recordFactory();
    const records = [
      r.event('e1', 'c', 'signup'),
      r.profile('p1', 'c', 1, { plan: 'pro' }),
      r.event('e1', 'c', 'signup'),
      r.event('e2', 'c', 'signup'),
    ];
    const withRedis = world();
    const without = world();
    without.known.available = false;
    const a = run(withRedis, records, { settings: { dedupWindowMs: 1 }, spacing: 5 });
    const b = run(without, records, { settings: { dedupWindowMs: 1 }, spacing: 5 });
    expect([...b.outcomes]).toEqual([...a.outcomes]);
    expect(triggerIds(without)).toEqual(triggerIds(withRedis));
    expect(triggerIds(without)).toEqual(['e1:welcome', 'e2:welcome']);
    expect([...without.documents.events]).toEqual([...withRedis.documents.events]);
    expect(without.known.marks.size).toBe(0);
  });

  it('commits by count every UNCOMMITTED_PER_HIGH_WATER × (HIGH_WATER − LOW_WATER) records, not at every LOW_WATER crossing', () => {
    const w = world();
    const r = recordFactory();
    const every = k * (5 - 3);
    const records = Array.from({ length: 4 * every }, (_, i) => r.event(`e${i}`, `c${i}`));
    const result = run(w, records, {
      // no timer within the run: only the count (and the completion) commits; batches of one
      // go out at once, and a batch window as long as the interval leaves no quiet commit
      settings: {
        highWater: 5,
        lowWater: 3,
        commitEvery: 1_000,
        commitIntervalMs: 1_000_000,
        batchMax: 1,
        batchMs: 1_000_000,
      },
      open: 100,
    });
    expect(result.completed).toBe(true);
    expect(w.commits.requests).toEqual([1, 2, 3, 4].map((n) => String(n * every)));
  });

  it('commits a burst a batch window after the partition goes quiet, not when the commit interval ends', () => {
    const settings = { highWater: 100, lowWater: 50, batchMax: 2, batchMs: 10, commitIntervalMs: 1_000 };
    const r = recordFactory();
    const burst = Array.from({ length: 4 }, (_, i) => r.event(`e${i}`, `c${i}`));
    const quiet = run(world(), burst, { settings, open: 5_000 });
    // Two batches of two, written at once by the in-memory store, by frame 4; quiet from then.
    expect(quiet.emitted.map((e) => e.commit.offset)).toEqual(['4']);
    expect(quiet.emitted[0]!.at).toBeLessThan(4 + 10 + 5);

    // One record less than a batch is a trickle: it keeps to the interval.
    const trickle = run(world(), [recordFactory().event('e0', 'c0')], { settings, open: 5_000 });
    expect(trickle.emitted.map((e) => e.commit.offset)).toEqual(['1']);
    expect(trickle.emitted[0]!.at).toBeGreaterThanOrEqual(1_000);
  });

  it('completes only after the last commit is durable, with nothing unfinished', () => {
    const w: World = { ...world(), commits: new InMemoryCommitSink({ latencyMs: 30 }) };
    const r = recordFactory();
    const result = run(w, [r.event('e1', 'c'), r.event('e2', 'c')], { settings: { commitEvery: 1 } });
    expect(result.completed).toBe(true);
    expect(result.tracker.unfinished).toBe(0);
    expect(w.commits.lastOffset).toBe('2');
    expect(w.commits.maxInFlight).toBe(1);
  });
});
