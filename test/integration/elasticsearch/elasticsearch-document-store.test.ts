import { Client } from '@elastic/elasticsearch';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePortFrom } from '../../../harness/ports.js';
import { type ExtraEsNode, startExtraEsNode } from '../../../harness/servers/extra-es-node.js';
import { esClient, stackEnv, uniqueName, waitFor } from '../../../harness/stack.js';
import type { ProfileUpdate } from '../../../src/model/message.js';
import { type MergedUpdate, mergeUpdates, type ProfileDocument } from '../../../src/model/profile-merge.js';
import { createRetryPolicy } from '../../../src/retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../../../src/sinks/elasticsearch/document-store.js';
import { IndexEpochs } from '../../../src/sinks/elasticsearch/index-epochs.js';
import { RecentProfiles } from '../../../src/sinks/elasticsearch/recent-profiles.js';
import type { EventDocument, EventWrite } from '../../../src/sinks/ports.js';
import { eventDocuments } from '../../support/data/event-documents.js';
import { HttpFaultProxy } from '../../support/servers/http-fault-proxy.js';

/**
 * ElasticsearchDocumentStore against a real Elasticsearch: what InMemoryDocumentStore
 * stands for (create answers "exists" for a known id; profiles merge by the contract's
 * rule), plus what only the real one has: per-item rejections, optimistic concurrency
 * between racing writers, and retries of 429s and connection errors.
 */

const silent = pino({ level: 'silent' });
const captureLog = () => {
  const lines: { level: number; msg: string; err?: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { log, lines };
};

async function createIndices(
  es: Client,
  profilesIndex: string,
  eventsIndex: string,
  shards = 1,
  /** More index settings; with them the create does not wait for the shards to start. */
  extra: Record<string, unknown> = {},
) {
  const settings = { number_of_shards: shards, number_of_replicas: 0, ...extra };
  const wait = Object.keys(extra).length > 0 ? { wait_for_active_shards: 0 as const } : {};
  await es.indices.create({
    index: profilesIndex,
    ...wait,
    settings,
    mappings: {
      properties: {
        clientId: { type: 'keyword' },
        version: { type: 'long' },
        data: { type: 'object', dynamic: 'runtime' },
        fieldVersions: { type: 'object', enabled: false },
      },
    },
  });
  await es.indices.create({
    index: eventsIndex,
    ...wait,
    settings,
    mappings: {
      properties: {
        clientId: { type: 'keyword' },
        name: { type: 'keyword' },
        ts: { type: 'date' },
        data: { type: 'object', dynamic: 'runtime' },
        origin: {
          properties: {
            topic: { type: 'keyword' },
            partition: { type: 'integer' },
            offset: { type: 'long' },
          },
        },
      },
    },
  });
}

const policy = (baseMs: number, maxMs: number) => createRetryPolicy({ baseMs, maxMs });

/** An event document as the worker writes it: created by the record at `in/0/<offset>`. */
const event = eventDocuments();
const originKey = (e: EventDocument) =>
  `${e.source.origin.topic}/${e.source.origin.partition}/${e.source.origin.offset}`;

const profile = (
  clientId: string,
  id: string,
  version: number,
  data: Record<string, unknown>,
): ProfileUpdate => ({ type: 'profile', id, clientId, version, ts: '2026-11-30T12:00:00.000Z', data });

const one = (u: ProfileUpdate): MergedUpdate => mergeUpdates([u]);

/**
 * The contract's merge rule, written out independently of src/model/profile-merge.ts:
 * per field, the value of the update with the highest version (equal: greater id).
 */
function expectedProfile(updates: readonly ProfileUpdate[]) {
  const winners = new Map<string, { value: unknown; version: number; id: string }>();
  for (const u of updates) {
    for (const [field, value] of Object.entries(u.data)) {
      const w = winners.get(field);
      if (!w || u.version > w.version || (u.version === w.version && u.id > w.id)) {
        winners.set(field, { value, version: u.version, id: u.id });
      }
    }
  }
  return {
    version: Math.max(...updates.map((u) => u.version)),
    data: Object.fromEntries([...winners].map(([f, w]) => [f, w.value])),
  };
}

/** Counts bulk items answered with a given status and error type, as the server sent them. */
function countItemStatuses(client: Client) {
  const counts = new Map<number, number>();
  const types = new Map<string, number>();
  const bulks: number[][] = [];
  client.diagnostic.on('response', (_err, result) => {
    const items = (
      result?.body as { items?: Record<string, { status: number; error?: { type?: string } }>[] } | undefined
    )?.items;
    if (!Array.isArray(items)) return;
    const results = items.map((item) => Object.values(item)[0]!);
    bulks.push(results.map((r) => r.status));
    for (const r of results) {
      counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
      if (r.error?.type) types.set(r.error.type, (types.get(r.error.type) ?? 0) + 1);
    }
  });
  return { counts, types, bulks };
}

/** A promise and whether it has settled yet: a write that waits has not. */
function tracked<T>(promise: Promise<T>): { readonly promise: Promise<T>; readonly settled: boolean } {
  const t = { promise, settled: false };
  promise.then(
    () => {
      t.settled = true;
    },
    () => {
      t.settled = true;
    },
  );
  return t;
}

describe('ElasticsearchDocumentStore against the stack Elasticsearch', () => {
  const es = esClient();
  const profilesIndex = uniqueName('rxingest-test-profiles');
  const eventsIndex = uniqueName('rxingest-test-events');
  const options = { profilesIndex, eventsIndex, retry: policy(20, 500) };
  const store = new ElasticsearchDocumentStore(es, options, silent);

  beforeAll(async () => {
    await createIndices(es, profilesIndex, eventsIndex);
  });
  afterAll(async () => {
    await es.indices.delete({ index: [profilesIndex, eventsIndex], ignore_unavailable: true });
    await es.close();
  });

  const getProfile = async (clientId: string) => {
    const res = await es.get<ProfileDocument>({ index: profilesIndex, id: clientId });
    return { ...res._source!, seqNo: res._seq_no! };
  };

  describe('createEvents', () => {
    it("answers 'created' for a new id, then 'exists' with the creator's origin for the same id, keeping the first", async () => {
      const first = [event('e-1'), event('e-2')];
      expect(await store.createEvents(first)).toEqual([{ status: 'created' }, { status: 'created' }]);

      const again = [event('e-3'), event('e-1', { name: 'resent' })];
      expect(await store.createEvents(again)).toEqual([
        { status: 'created' },
        { status: 'exists', owner: originKey(first[0]!) },
      ]);
      // A replay of the creating record finds its own origin.
      expect(await store.createEvents([first[1]!])).toEqual([
        { status: 'exists', owner: originKey(first[1]!) },
      ]);

      const res = await es.mget<EventDocument['source']>({ index: eventsIndex, ids: ['e-1', 'e-2', 'e-3'] });
      const sources = res.docs.map((d) => ('_source' in d ? d._source : undefined));
      expect(sources).toEqual([first[0]!.source, first[1]!.source, again[0]!.source]);
    });

    it("answers 'created' then 'exists' for the same id twice within one bulk", async () => {
      const firstCopy = event('dup', { name: 'first' });
      const results = await store.createEvents([firstCopy, event('dup', { name: 'second' })]);
      expect(results).toEqual([{ status: 'created' }, { status: 'exists', owner: originKey(firstCopy) }]);
      const doc = await es.get<EventDocument['source']>({ index: eventsIndex, id: 'dup' });
      expect(doc._source?.name).toBe('first');
    });

    it("rejects an item the mapping refuses, with the server's reason, and still writes the rest of the bulk", async () => {
      const results = await store.createEvents([
        event('ok-1'),
        event('bad-ts', { ts: 'not-a-date' }),
        event('ok-2'),
      ]);
      expect(results[0]).toEqual({ status: 'created' });
      expect(results[2]).toEqual({ status: 'created' });
      expect(results[1]).toMatchObject({ status: 'rejected' });
      const reason = (results[1] as { reason: string }).reason;
      expect(reason).toMatch(/^Elasticsearch 400 document_parsing_exception: /);
      expect(reason).toContain('[ts]');
      expect(reason).toContain('not-a-date');

      const res = await es.mget({ index: eventsIndex, ids: ['ok-1', 'bad-ts', 'ok-2'] });
      expect(res.docs.map((d) => 'found' in d && d.found)).toEqual([true, false, true]);
    });
  });

  describe('mergeProfiles', () => {
    it('applies the merge rule per field: highest version wins, equal versions go to the greater id', async () => {
      const c = 'merge-rule';
      const u1 = profile(c, 'm-b', 5, { plan: 'pro', city: 'Oslo', tier: 'b@5' });
      const u2 = profile(c, 'm-a', 7, { plan: 'free', email: 'a@x' }); // newer plan
      const u3 = profile(c, 'm-z', 3, { city: 'Rome', phone: '1' }); // older city, new phone
      const u4 = profile(c, 'm-c', 5, { tier: 'c@5' }); // same version as u1: 'm-c' > 'm-b' wins
      const u5 = profile(c, 'm-a', 5, { tier: 'a@5' }); // same version: 'm-a' < 'm-c' loses

      expect(await store.mergeProfiles([one(u1)])).toEqual([{ status: 'applied' }]);
      expect(await store.mergeProfiles([one(u2)])).toEqual([{ status: 'applied' }]);
      expect(await store.mergeProfiles([one(u3)])).toEqual([{ status: 'applied' }]);
      expect(await store.mergeProfiles([one(u4)])).toEqual([{ status: 'applied' }]);
      expect(await store.mergeProfiles([one(u5)])).toEqual([{ status: 'stale' }]);

      const doc = await getProfile(c);
      expect(doc.clientId).toBe(c);
      expect(doc.version).toBe(7);
      expect(doc.data).toEqual({ plan: 'free', city: 'Oslo', tier: 'c@5', email: 'a@x', phone: '1' });
      expect(doc.data).toEqual(expectedProfile([u1, u2, u3, u4, u5]).data);
      expect(doc.fieldVersions.tier).toEqual({ version: 5, id: 'm-c' });
      expect(doc.fieldVersions.plan).toEqual({ version: 7, id: 'm-a' });
    });

    it("answers 'stale' for an update every field of which is outranked, and leaves the document untouched", async () => {
      const c = 'stale';
      await store.mergeProfiles([one(profile(c, 's-2', 10, { a: 'new', b: 'new' }))]);
      const before = await getProfile(c);

      const results = await store.mergeProfiles([
        one(profile(c, 's-1', 9, { a: 'old', b: 'old' })), // older on every field
        one(profile(`${c}-other`, 's-3', 1, { a: 'x' })), // another client in the same call
      ]);
      expect(results).toEqual([{ status: 'stale' }, { status: 'applied' }]);

      const after = await getProfile(c);
      expect(after.seqNo).toBe(before.seqNo); // nothing was written
      expect(after.data).toEqual({ a: 'new', b: 'new' });

      // Outranked on one field but new on another: applied, and only the new field changes.
      expect(await store.mergeProfiles([one(profile(c, 's-0', 8, { a: 'older', z: 'z' }))])).toEqual([
        { status: 'applied' },
      ]);
      expect((await getProfile(c)).data).toEqual({ a: 'new', b: 'new', z: 'z' });
    });

    it('merges two updates of the same client within one call (the second one re-reads after its 409)', async () => {
      const c = 'same-call';
      const u1 = profile(c, 'sc-1', 1, { a: 1, b: 1 });
      const u2 = profile(c, 'sc-2', 2, { b: 2, c: 2 });
      const results = await store.mergeProfiles([one(u1), one(u2)]);
      expect(results).toEqual([{ status: 'applied' }, { status: 'applied' }]);
      const doc = await getProfile(c);
      expect({ version: doc.version, data: doc.data }).toEqual(expectedProfile([u1, u2]));
    });

    it("merges the reads of eight partitions' batches that arrive together into five mgets (four out at once, the rest sharing the next), and every profile exactly", async () => {
      const client = esClient();
      try {
        const mgets = countMgets(client);
        const shared = new ElasticsearchDocumentStore(client, options, silent);
        const first = Array.from({ length: 8 }, (_, p) => [
          profile(`coalesced-${p}`, `co-${p}-1`, 1, { a: p, b: p }),
          profile(`coalesced-${p}-x`, `co-${p}-x`, 3, { only: p }),
        ]);
        // Eight batches at once, as eight partitions' graphs hand them over.
        const created = await Promise.all(first.map((batch) => shared.mergeProfiles(batch.map(one))));
        expect(created.flat().every((r) => r.status === 'applied')).toBe(true);
        expect(mgets()).toBe(5);
        // Again, now that every profile exists: each batch's reads came back to its own updates.
        const second = Array.from({ length: 8 }, (_, p) => [
          profile(`coalesced-${p}`, `co-${p}-2`, 2, { b: 100 + p, c: p }),
          profile(`coalesced-${p}-x`, `co-${p}-y`, 2, { only: 100 + p }),
        ]);
        const merged = await Promise.all(second.map((batch) => shared.mergeProfiles(batch.map(one))));
        expect(merged.map((batch) => batch.map((r) => r.status))).toEqual(
          Array.from({ length: 8 }, () => ['applied', 'stale']),
        );
        expect(mgets()).toBe(10);
        for (let p = 0; p < 8; p++) {
          const doc = await getProfile(`coalesced-${p}`);
          expect({ version: doc.version, data: doc.data }).toEqual(
            expectedProfile([first[p]![0]!, second[p]![0]!]),
          );
          const other = await getProfile(`coalesced-${p}-x`);
          expect({ version: other.version, data: other.data }).toEqual(expectedProfile([first[p]![1]!]));
        }
      } finally {
        await client.close();
      }
    });

    it('two stores on two clients racing on one profile never lose a newer field', async () => {
      const c = 'race';
      const clientA = esClient();
      const clientB = esClient();
      const seenA = countItemStatuses(clientA);
      const seenB = countItemStatuses(clientB);
      const storeA = new ElasticsearchDocumentStore(clientA, options, silent);
      const storeB = new ElasticsearchDocumentStore(clientB, options, silent);
      try {
        // Versions interleaved and out of order: writer A has the odd ones going down,
        // writer B the even ones going up, so each field's winner keeps moving between them.
        const rounds = 20;
        const all: ProfileUpdate[] = [];
        for (let r = 0; r < rounds; r++) {
          const a = profile(c, `A-${String(r).padStart(2, '0')}`, 2 * (rounds - r) - 1, {
            shared: `A${r}`,
            [`f${r % 4}`]: `A${r}`,
            onlyA: r,
          });
          const b = profile(c, `B-${String(r).padStart(2, '0')}`, 2 * r, {
            shared: `B${r}`,
            [`f${(r + 1) % 4}`]: `B${r}`,
            onlyB: r,
          });
          // Same version for a tie now and then: the greater id ('B-…' > 'A-…') must win.
          if (r % 5 === 0) Object.assign(b, { version: a.version });
          all.push(a, b);
          const [ra, rb] = await Promise.all([
            storeA.mergeProfiles([one(a)]),
            storeB.mergeProfiles([one(b)]),
          ]);
          for (const x of [...ra, ...rb]) expect(['applied', 'stale']).toContain(x.status);
        }
        const doc = await getProfile(c);
        expect({ version: doc.version, data: doc.data }).toEqual(expectedProfile(all));
        // The race was real: writes were refused on a changed sequence number, and retried.
        const conflicts = (seenA.counts.get(409) ?? 0) + (seenB.counts.get(409) ?? 0);
        expect(conflicts).toBeGreaterThan(0);
      } finally {
        await Promise.all([clientA.close(), clientB.close()]);
      }
    });
  });
});

/** Counts the `_mget` requests a client sends. */
function countMgets(client: Client) {
  let mgets = 0;
  client.diagnostic.on('request', (_err, result) => {
    if (result?.meta.request.params.path.endsWith('/_mget')) mgets++;
  });
  return () => mgets;
}

describe('ElasticsearchDocumentStore with recent profiles (PROFILE_CACHE_SIZE)', () => {
  const profilesIndex = uniqueName('rxingest-test-recent-profiles');
  const eventsIndex = uniqueName('rxingest-test-recent-events');
  const unusedEvents = uniqueName('rxingest-test-unused-events');
  const clients: Client[] = [];
  /** A store with its own client, cache and epochs, and a count of its reads. */
  const cachedStore = (epochAgeMs = 30_000) => {
    const client = esClient();
    clients.push(client);
    const mgets = countMgets(client);
    const cache = new RecentProfiles(1_000);
    const store = new ElasticsearchDocumentStore(
      client,
      {
        profilesIndex,
        eventsIndex,
        retry: policy(20, 500),
        recentProfiles: { cache, epochs: new IndexEpochs(client, epochAgeMs) },
      },
      silent,
    );
    return { store, cache, mgets };
  };
  const es = esClient();
  clients.push(es);
  const getProfile = async (clientId: string) =>
    (await es.get<ProfileDocument>({ index: profilesIndex, id: clientId }))._source!;

  beforeAll(async () => {
    await createIndices(es, profilesIndex, eventsIndex);
  });
  afterAll(async () => {
    await es.indices.delete({ index: [profilesIndex, eventsIndex, unusedEvents], ignore_unavailable: true });
    await Promise.all(clients.map((c) => c.close()));
  });

  it('writes the next update of a client seen lately without reading it first, and merges exactly', async () => {
    const { store, cache, mgets } = cachedStore();
    const updates = Array.from({ length: 10 }, (_, k) =>
      profile('seen-lately', `sl-${k}`, k + 1, { [`f${k % 3}`]: k, last: k }),
    );
    for (const u of updates) expect(await store.mergeProfiles([one(u)])).toEqual([{ status: 'applied' }]);
    expect(mgets()).toBe(1); // only the first update read the (missing) profile
    expect(cache.stats()).toMatchObject({ hits: 9, misses: 1 });
    const doc = await getProfile('seen-lately');
    expect({ version: doc.version, data: doc.data }).toEqual(expectedProfile(updates));
  });

  it('two caching stores racing on one profile: stale entries cost a 409 and a read, never a newer field', async () => {
    const a = cachedStore();
    const b = cachedStore();
    const all: ProfileUpdate[] = [];
    for (let r = 0; r < 20; r++) {
      const ua = profile('race-cached', `A-${String(r).padStart(2, '0')}`, 2 * (20 - r) - 1, {
        shared: `A${r}`,
        onlyA: r,
      });
      const ub = profile('race-cached', `B-${String(r).padStart(2, '0')}`, 2 * r, {
        shared: `B${r}`,
        onlyB: r,
      });
      all.push(ua, ub);
      await Promise.all([a.store.mergeProfiles([one(ua)]), b.store.mergeProfiles([one(ub)])]);
    }
    const doc = await getProfile('race-cached');
    expect({ version: doc.version, data: doc.data }).toEqual(expectedProfile(all));
  });

  it('after the profiles index is deleted and created again, remembered clients are written from what is stored now', async () => {
    // A long epoch age: the store does not notice the new index by its uuid, only by the 409s.
    const { store } = cachedStore(3_600_000);
    await store.mergeProfiles([one(profile('rebuilt', 'r-5', 5, { a: 'v5', b: 'v5' }))]);
    await store.mergeProfiles([one(profile('rebuilt-2', 'r2-5', 5, { a: 'v5' }))]);
    await es.indices.delete({ index: profilesIndex });
    await createIndices(es, profilesIndex, unusedEvents);
    // New on a field: the remembered sequence number is refused, the read finds nothing, create.
    const fresh = profile('rebuilt', 'r-3', 3, { c: 'v3' });
    expect(await store.mergeProfiles([one(fresh)])).toEqual([{ status: 'applied' }]);
    expect((await getProfile('rebuilt')).data).toEqual({ c: 'v3' });
    // Outranked by what the entry remembers: not believed; the read finds nothing, so it is written.
    const older = profile('rebuilt-2', 'r2-1', 1, { a: 'v1' });
    expect(await store.mergeProfiles([one(older)])).toEqual([{ status: 'applied' }]);
    expect((await getProfile('rebuilt-2')).data).toEqual({ a: 'v1' });
  });

  it('forgets a deleted profile (tombstone): the next update creates it anew', async () => {
    const { store } = cachedStore();
    await store.mergeProfiles([one(profile('tomb', 't-1', 1, { a: 1 }))]);
    expect(await store.deleteProfiles(['tomb'])).toEqual([{ status: 'deleted' }]);
    expect(await store.mergeProfiles([one(profile('tomb', 't-2', 2, { b: 2 }))])).toEqual([
      { status: 'applied' },
    ]);
    expect((await getProfile('tomb')).data).toEqual({ b: 2 });
  });
});

describe("ElasticsearchDocumentStore: a fault of the destination is never the record's fault", () => {
  const es = esClient();
  const profilesIndex = uniqueName('rxingest-test-profiles');
  // Indices with "-noauto-" in their name are never auto-created (cluster setting below).
  const eventsIndex = uniqueName('rxingest-test-noauto-events');
  const store = new ElasticsearchDocumentStore(
    es,
    { profilesIndex, eventsIndex, retry: policy(20, 200) },
    silent,
  );

  beforeAll(async () => {
    await es.cluster.putSettings({ persistent: { 'action.auto_create_index': '-*-noauto-*,+*' } });
    await createIndices(es, profilesIndex, eventsIndex);
  });
  afterAll(async () => {
    await es.cluster.putSettings({ persistent: { 'action.auto_create_index': null } });
    // `*`: the deleted-profiles-index case leaves `${profilesIndex}-unused` behind.
    await es.indices.delete({ index: `${profilesIndex}*,${eventsIndex}*`, ignore_unavailable: true });
    await es.close();
  });

  it('retries writes to a write-blocked index (403 cluster_block_exception) until the block is lifted', async () => {
    await es.indices.putSettings({
      index: [profilesIndex, eventsIndex],
      settings: { 'index.blocks.write': true },
    });
    const { counts } = countItemStatuses(es);
    const events = [event('blocked-1'), event('blocked-2')];
    const writing = Promise.all([
      store.createEvents(events),
      store.mergeProfiles([one(profile('blocked', 'p-1', 1, { plan: 'pro' }))]),
    ]);
    await waitFor('blocked items answered 403', () => (counts.get(403) ?? 0) >= 3, {
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    await es.indices.putSettings({
      index: [profilesIndex, eventsIndex],
      settings: { 'index.blocks.write': false },
    });
    const [eventResults, profileResults] = await writing;
    expect(eventResults).toEqual([{ status: 'created' }, { status: 'created' }]);
    expect(profileResults).toEqual([{ status: 'applied' }]);
  });

  it.each([
    ['index.blocks.read_only', 403],
    ['index.blocks.read_only_allow_delete', 429],
  ] as const)(
    'retries writes to an index under %s (cluster_block_exception %i) until the block is lifted',
    async (block, status) => {
      const indices = [profilesIndex, eventsIndex];
      const lift = () => es.indices.putSettings({ index: indices, settings: { [block]: null } as never });
      await es.indices.putSettings({ index: indices, settings: { [block]: true } });
      try {
        const { counts, types } = countItemStatuses(es);
        const tag = block.replace(/\W/g, '-');
        const events = [event(`${tag}-1`), event(`${tag}-2`)];
        const writing = tracked(
          Promise.all([
            store.createEvents(events),
            store.mergeProfiles([one(profile(tag, `${tag}-p`, 1, { plan: 'pro' }))]),
          ]),
        );
        // Two rounds of every item refused: the events and the profile (its read goes through).
        await waitFor(
          `items refused ${status} cluster_block_exception`,
          () => (counts.get(status) ?? 0) >= 6 && (types.get('cluster_block_exception') ?? 0) >= 6,
          { timeoutMs: 10_000, intervalMs: 20 },
        );
        expect(writing.settled, 'the writes wait while the index is blocked').toBe(false);
        await lift();
        const [eventResults, profileResults] = await writing.promise;
        expect(eventResults).toEqual([{ status: 'created' }, { status: 'created' }]);
        expect(profileResults).toEqual([{ status: 'applied' }]);
        const doc = await es.get<ProfileDocument>({ index: profilesIndex, id: tag });
        expect(doc._source?.data).toEqual({ plan: 'pro' });
      } finally {
        await lift(); // the tests after this one write to these indices too
      }
    },
  );

  it('waits while the primary shards cannot be allocated (bulks time out, mget answers no_shard_available_action_exception) and writes once they are', async () => {
    const unassigned = {
      profiles: uniqueName('rxingest-test-red-p'),
      events: uniqueName('rxingest-test-red-e'),
    };
    const nowhere = { 'index.routing.allocation.require._name': 'no-such-node' };
    await createIndices(es, unassigned.profiles, unassigned.events, 1, nowhere);
    // As the worker's client: no retries of its own, a request timeout shorter than the node's
    // one minute wait for an active primary.
    const client = new Client({ node: stackEnv.esNode, requestTimeout: 1_000, maxRetries: 0 });
    let timeouts = 0;
    let noShard = 0;
    client.diagnostic.on('response', (err, result) => {
      if (err?.name === 'TimeoutError') timeouts++;
      const docs = (result?.body as { docs?: { error?: { type?: string } }[] } | undefined)?.docs ?? [];
      noShard += docs.filter((d) => d.error?.type === 'no_shard_available_action_exception').length;
    });
    const red = new ElasticsearchDocumentStore(
      client,
      { profilesIndex: unassigned.profiles, eventsIndex: unassigned.events, retry: policy(20, 200) },
      silent,
    );
    try {
      const events = [event('red-1'), event('red-2'), event('red-3')];
      const writing = tracked(
        Promise.all([
          red.createEvents(events),
          red.mergeProfiles([one(profile('red', 'red-p', 1, { plan: 'pro' }))]),
        ]),
      );
      await waitFor('bulks timed out and reads refused', () => timeouts >= 2 && noShard >= 2, {
        timeoutMs: 20_000,
        intervalMs: 20,
      });
      const health = await es.cluster.health({ index: [unassigned.profiles, unassigned.events] });
      expect(health.status).toBe('red');
      expect(writing.settled, 'the writes wait while no primary is active').toBe(false);

      await es.indices.putSettings({
        index: [unassigned.profiles, unassigned.events],
        settings: { 'index.routing.allocation.require._name': null } as never,
      });
      const [eventResults, profileResults] = await writing.promise;
      // A bulk that timed out on the client still waits on the node and may create an event
      // once the shard starts: the store then reads its own origin there (a replay), never a copy.
      events.forEach((e, i) => {
        const mine = [{ status: 'created' }, { status: 'exists', owner: originKey(e) }];
        expect(mine, e.id).toContainEqual(eventResults[i]);
      });
      expect(profileResults).toEqual([{ status: 'applied' }]);
      await es.indices.refresh({ index: unassigned.events });
      expect((await es.count({ index: unassigned.events })).count).toBe(events.length);
      const stored = await es.mget<EventDocument['source']>({
        index: unassigned.events,
        ids: events.map((e) => e.id),
      });
      expect(stored.docs.map((d) => ('_source' in d ? d._source : undefined))).toEqual(
        events.map((e) => e.source),
      );
    } finally {
      await client.close();
      await es.indices.delete({ index: [unassigned.profiles, unassigned.events], ignore_unavailable: true });
    }
  });

  it('retries 5xx answers — made by an HTTP proxy in front of the node: 503 without forwarding, then 502 after the node did the writes — and writes everything once', async () => {
    const proxy = await HttpFaultProxy.to(stackEnv.esNode);
    const client = new Client({ node: proxy.url, requestTimeout: 10_000, maxRetries: 0 });
    const behind = new ElasticsearchDocumentStore(
      client,
      { profilesIndex, eventsIndex, retry: policy(20, 200) },
      silent,
    );
    const exists = (index: string, id: string) => es.exists({ index, id });
    try {
      proxy.refuse(503);
      const events = [event('5xx-1'), event('5xx-2')];
      const writing = tracked(
        Promise.all([
          behind.createEvents(events),
          behind.mergeProfiles([one(profile('5xx', '5xx-p', 1, { plan: 'pro' }))]),
        ]),
      );
      await waitFor(
        'bulks and reads answered 503',
        () => proxy.madeFor('/_bulk') >= 2 && proxy.madeFor('/_mget') >= 2,
        {
          timeoutMs: 10_000,
          intervalMs: 20,
        },
      );
      expect(writing.settled, 'the writes wait while the answers are 503').toBe(false);
      expect(await exists(eventsIndex, '5xx-1')).toBe(false);

      // Now the node does the writes, and the store hears 502 instead of their answers (its
      // reads go through, so the update is read back as done: stale, while the events wait).
      proxy.loseAnswers(502, '/_bulk');
      await waitFor(
        'the writes done by the node while the answers were lost',
        async () =>
          (await exists(eventsIndex, '5xx-1')) &&
          (await exists(eventsIndex, '5xx-2')) &&
          (await exists(profilesIndex, '5xx')),
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      expect(writing.settled, 'the event writes wait while their answers are 502').toBe(false);

      proxy.forward();
      const [eventResults, profileResults] = await writing.promise;
      // What the node did unheard is found, not done twice: each event names its own record as
      // its creator (a replay, which still triggers), and the update is already in (stale).
      expect(eventResults).toEqual(events.map((e) => ({ status: 'exists', owner: originKey(e) })));
      expect(profileResults).toEqual([{ status: 'stale' }]);
      const doc = await es.get<ProfileDocument>({ index: profilesIndex, id: '5xx' });
      expect({ version: doc._source?.version, data: doc._source?.data }).toEqual({
        version: 1,
        data: { plan: 'pro' },
      });
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  it('waits for a deleted events index while auto-create is off, never rejecting, and writes once it is back', async () => {
    await es.indices.delete({ index: eventsIndex });
    const { counts } = countItemStatuses(es);
    const events = [event('missing-1'), event('missing-2'), event('missing-3')];
    const writing = store.createEvents(events);
    await waitFor('items answered 404 index_not_found', () => (counts.get(404) ?? 0) >= 6, {
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    // The operator creates the index again: everything lands, nothing was refused.
    await es.indices.create({ index: eventsIndex });
    expect(await writing).toEqual(events.map(() => ({ status: 'created' })));
    const res = await es.mget({ index: eventsIndex, ids: events.map((e) => e.id) });
    expect(res.docs.every((d) => 'found' in d && d.found)).toBe(true);
  });

  it('waits for a deleted profiles index (mget answers 404) and merges once it is back', async () => {
    await es.indices.delete({ index: profilesIndex });
    const noAuto = uniqueName('rxingest-test-noauto-profiles');
    const s2 = new ElasticsearchDocumentStore(
      es,
      { profilesIndex: noAuto, eventsIndex, retry: policy(20, 200) },
      silent,
    );
    const writing = s2.mergeProfiles([one(profile('gone', 'p-9', 3, { tier: 'gold' }))]);
    await new Promise((r) => setTimeout(r, 300));
    await createIndices(es, noAuto, `${noAuto}-unused`);
    expect(await writing).toEqual([{ status: 'applied' }]);
    const doc = await es.get<ProfileDocument>({ index: noAuto, id: 'gone' });
    expect(doc._source?.data).toEqual({ tier: 'gold' });
    await es.indices.delete({ index: `${noAuto},${noAuto}-unused` });
    await createIndices(es, profilesIndex, `${profilesIndex}-unused`);
  });

  it('under a date pattern creates the day index itself (from the template) when auto-create is off', async () => {
    const pattern = `${eventsIndex}-{yyyy.MM.dd}`;
    await es.indices.putIndexTemplate({
      name: `${eventsIndex}-template`,
      index_patterns: [`${eventsIndex}-*`],
      template: { mappings: { properties: { origin: { properties: { offset: { type: 'long' } } } } } },
    });
    const daily = new ElasticsearchDocumentStore(
      es,
      { profilesIndex, eventsIndex: pattern, retry: policy(20, 200) },
      silent,
    );
    const e1 = event('day-1', { ts: '2026-12-24T23:59:59.999Z' });
    const e2 = event('day-2', { ts: '2026-12-25T00:00:00.000+01:00' }); // 2026-12-24 in UTC
    const e3 = event('day-3', { ts: '2026-12-25T00:00:00.000Z' });
    expect(await daily.createEvents([e1, e2, e3])).toEqual([
      { status: 'created' },
      { status: 'created' },
      { status: 'created' },
    ]);
    expect((await es.get({ index: `${eventsIndex}-2026.12.24`, id: 'day-2' })).found).toBe(true);
    expect((await es.get({ index: `${eventsIndex}-2026.12.25`, id: 'day-3' })).found).toBe(true);
    // A re-sent copy carries the same ts, so it meets its original in the same index.
    expect(await daily.createEvents([event('day-2', { ts: e2.source.ts })])).toEqual([
      { status: 'exists', owner: originKey(e2) },
    ]);
    await es.indices.deleteIndexTemplate({ name: `${eventsIndex}-template` });
  });

  it('deletes profiles (tombstones): deleted, or absent when there is none', async () => {
    await store.mergeProfiles([one(profile('to-delete', 'p-1', 1, { plan: 'pro' }))]);
    expect(await store.deleteProfiles(['to-delete', 'never-there'])).toEqual([
      { status: 'deleted' },
      { status: 'absent' },
    ]);
    expect(await es.exists({ index: profilesIndex, id: 'to-delete' })).toBe(false);
  });

  it('stores and merges fields named __proto__, constructor and prototype like any other, and no prototype changes', async () => {
    const hostile = (id: string, version: number, entries: [string, unknown][]) =>
      profile('hostile', id, version, Object.fromEntries(entries) as Record<string, unknown>);
    const u1 = JSON.parse('{"__proto__":{"isAdmin":true},"plan":"free","constructor":{"prototype":{"x":1}}}');
    const u2 = JSON.parse('{"__proto__":{"isAdmin":false},"prototype":"p"}');
    const results = await store.mergeProfiles([
      mergeUpdates([hostile('h-1', 1, Object.entries(u1)), hostile('h-2', 2, Object.entries(u2))]),
    ]);
    expect(results).toEqual([{ status: 'applied' }]);
    const res = await es.transport.request<{ _source: { data: unknown } }>({
      method: 'GET',
      path: `/${profilesIndex}/_doc/hostile`,
    });
    const data = JSON.parse(JSON.stringify(res._source.data));
    expect(Object.keys(data).sort()).toEqual(['__proto__', 'constructor', 'plan', 'prototype']);
    // JSON text, not an object literal: in a literal `__proto__` would set the prototype.
    expect(JSON.stringify(data)).toBe(
      '{"__proto__":{"isAdmin":false},"plan":"free","constructor":{"prototype":{"x":1}},"prototype":"p"}',
    );
    expect(({} as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('isAdmin');
  });

  it('writes text in any script, astral characters and line separators included, exactly (the _bulk body is UTF-8 bytes)', async () => {
    // Enough multi-byte text that the body outgrows a buffer sized one byte a character.
    const text = `Grüße, 東京, ${'😀'.repeat(300)}, \u2028\u2029 "quoted" \\ ${'é'.repeat(2000)}`;
    const ids = ['ü-1', '東京-2', '😀-3'];
    const events = ids.map((id) => event(id, { name: 'naïve', data: { text, [`clé-${id}`]: id } }));
    expect(await store.createEvents(events)).toEqual(ids.map(() => ({ status: 'created' })));
    expect(
      await store.mergeProfiles([one(profile('clïent-😀', 'p-1', 1, { bio: text, ñame: 'Zoë' }))]),
    ).toEqual([{ status: 'applied' }]);
    await es.indices.refresh({ index: [eventsIndex, profilesIndex] });
    for (const [i, id] of ids.entries()) {
      const doc = await es.get<EventDocument['source']>({ index: eventsIndex, id });
      expect(doc._source).toEqual(events[i]!.source);
    }
    const stored = await es.get<{ data: Record<string, unknown> }>({ index: profilesIndex, id: 'clïent-😀' });
    expect(stored._source?.data).toEqual({ bio: text, ñame: 'Zoë' });
  });
});

/**
 * A second node that pushes back: a tiny indexing-pressure limit (a bulk above it, or
 * several at once, gets a request-level 429) and a one-thread write pool with a queue
 * of two (shard-level bulks beyond that fail their items with 429, so one bulk answers
 * some items 201 and others 429). Its port is chosen before it starts, so a store can be
 * pointed at it while nothing listens there yet. It also takes no operation above 16 KB
 * and no request above 1 MB, for documents larger than a node takes.
 */
describe('ElasticsearchDocumentStore retries against a second node under pressure', () => {
  const pressure = {
    'indexing_pressure.memory.limit': '64kb',
    'thread_pool.write.size': 1,
    'thread_pool.write.queue_size': 2,
    'indexing_pressure.memory.max_operation_size': '16kb',
    'http.max_content_length': '1mb',
  };
  const profilesIndex = uniqueName('rxingest-test-profiles');
  const eventsIndex = uniqueName('rxingest-test-events');
  const options = { profilesIndex, eventsIndex, retry: policy(20, 300) };
  let node: ExtraEsNode | undefined;
  let es: Client;

  // Started before the node exists, so its first attempts meet a closed port.
  const earlyEvents = Array.from({ length: 5 }, (_, i) => event(`early-${i}`));
  const early = captureLog();
  let earlyClient: Client;
  let earlyWrite: Promise<EventWrite[] | Error>;
  let failuresBeforeStart = 0;
  let earlyStore: ElasticsearchDocumentStore;

  beforeAll(async () => {
    const port = await freePortFrom(9210);
    earlyClient = new Client({ node: `http://127.0.0.1:${port}`, requestTimeout: 10_000 });
    earlyStore = new ElasticsearchDocumentStore(
      earlyClient,
      { ...options, eventsIndex: `${eventsIndex}-early` },
      early.log,
    );
    earlyWrite = earlyStore.createEvents(earlyEvents, AbortSignal.timeout(170_000)).catch((e: Error) => e);
    await waitFor('a refused connection', () => early.lines.some((l) => /failing; retrying/.test(l.msg)), {
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    failuresBeforeStart = early.lines.filter((l) => /failing; retrying/.test(l.msg)).length;

    node = await startExtraEsNode({ httpPort: port, settings: pressure });
    expect(node.port).toBe(port);
    es = new Client({ node: node.url, requestTimeout: 30_000 });
    await createIndices(es, profilesIndex, eventsIndex, 4);
  });

  afterAll(async () => {
    await earlyClient?.close();
    await es?.close();
    await node?.stop();
  });

  it('retries connection errors while nothing listens, and writes everything once a node is up', async () => {
    // One line while it fails (repeats are summarised), whatever the number of retries.
    expect(failuresBeforeStart).toBe(1);
    expect(
      (early.lines.find((l) => /failing; retrying/.test(l.msg)) as { err?: string } | undefined)?.err,
    ).toMatch(/ConnectionError|NoLivingConnections/);
    const results = await earlyWrite;
    // The next batch that goes through at once says the writes recovered.
    expect(early.lines.some((l) => /succeed again after/.test(l.msg))).toBe(false);
    await earlyStore.createEvents([event('early-after')]);
    expect(early.lines.some((l) => /succeed again after/.test(l.msg))).toBe(true);
    expect(results).toEqual(earlyEvents.map(() => ({ status: 'created' })));
    const res = await es.mget({ index: `${eventsIndex}-early`, ids: earlyEvents.map((e) => e.id) });
    expect(res.docs.every((d) => 'found' in d && d.found)).toBe(true);
  });

  it('really answers a bulk above the indexing-pressure limit with 429 es_rejected_execution_exception', async () => {
    const operations = Array.from({ length: 20 }, (_, i) => [
      { create: { _index: eventsIndex, _id: `big-${i}` } },
      event(`big-${i}`, { data: { pad: 'x'.repeat(5000) } }).source,
    ]).flat();
    const err = await es.bulk({ operations }).then(
      () => undefined,
      (e: { meta?: { statusCode?: number; body?: { error?: { type?: string } } } }) => e,
    );
    expect(err?.meta?.statusCode).toBe(429);
    expect(err?.meta?.body?.error?.type).toBe('es_rejected_execution_exception');
    await es.indices.refresh({ index: eventsIndex });
    expect((await es.count({ index: eventsIndex })).count).toBe(0);
  });

  it('splits a batch larger than the indexing-pressure limit (refused whole, every time) until every event is in, once each', async () => {
    const client = new Client({ node: node!.url, requestTimeout: 30_000 });
    const seen = countItemStatuses(client);
    let refusedWhole = 0;
    client.diagnostic.on('response', (_err, result) => {
      if (result?.statusCode === 429 && result.meta.request.params.path.endsWith('/_bulk')) refusedWhole++;
    });
    const store = new ElasticsearchDocumentStore(client, options, silent);
    try {
      // 60 events of ~5 KB: 300 KB in one bulk, far over the node's 64 KB.
      const batch = Array.from({ length: 60 }, (_, i) =>
        event(`whole-${i}`, { data: { pad: 'w'.repeat(5000) } }),
      );
      const results = await store.createEvents(batch, AbortSignal.timeout(120_000));
      expect(results).toEqual(batch.map(() => ({ status: 'created' })));
      expect(refusedWhole).toBeGreaterThan(0);
      expect(seen.counts.get(409) ?? 0).toBe(0);
      await es.indices.refresh({ index: eventsIndex });
      const ids = batch.map((e) => e.id);
      expect((await es.count({ index: eventsIndex, query: { ids: { values: ids } } })).count).toBe(
        ids.length,
      );
    } finally {
      await client.close();
    }
  });

  it('rejects a document larger than the node takes (over max_operation_size; alone over http.max_content_length) and writes the rest of its batch once', async () => {
    // One shard: the large document shares its shard's part of every request with small ones.
    const index = `${eventsIndex}-one-shard`;
    await es.indices.create({ index, settings: { number_of_shards: 1, number_of_replicas: 0 } });
    const client = new Client({ node: node!.url, requestTimeout: 30_000 });
    const seen = countItemStatuses(client);
    const store = new ElasticsearchDocumentStore(client, { ...options, eventsIndex: index }, silent);
    try {
      const small = Array.from({ length: 12 }, (_, i) => event(`fits-${i}`));
      // 20 KB: over the 16 KB operation limit, so its shard's whole share is refused (429).
      const overOperation = event('over-operation', { data: { pad: 'o'.repeat(20_000) } });
      // 1.1 MB: a request holding it is over http.max_content_length (413, refused whole).
      const overRequest = event('over-request', { data: { pad: 'r'.repeat(1_100_000) } });
      const batch = [...small.slice(0, 6), overOperation, ...small.slice(6), overRequest];
      const results = await store.createEvents(batch, AbortSignal.timeout(60_000));

      expect(results[6]).toMatchObject({ status: 'rejected' });
      expect((results[6] as { reason: string }).reason).toMatch(
        /^Elasticsearch 429 es_rejected_execution_exception: Request contains an operation of size \[\d+\] bytes, which exceeds the maximum allowed limit of \[16384\] bytes$/,
      );
      expect(results[13]).toEqual({
        status: 'rejected',
        reason:
          "Elasticsearch 413 request_entity_too_large: a _bulk request of this document alone was refused whole (413): it is larger than the node's http.max_content_length",
      });
      const fits = batch.map((e, i) => [e, results[i]] as const).filter(([e]) => e.id.startsWith('fits-'));
      for (const [e, r] of fits) expect(r, e.id).toEqual({ status: 'created' });
      // The small ones refused beside the large one were really refused, and then written once.
      expect(seen.counts.get(429) ?? 0).toBeGreaterThan(1);
      expect(seen.counts.get(409) ?? 0).toBe(0);
      await es.indices.refresh({ index });
      const res = await es.mget({ index, ids: batch.map((e) => e.id) });
      expect(res.docs.map((d) => 'found' in d && d.found)).toEqual(
        batch.map((e) => e.id.startsWith('fits-')),
      );
    } finally {
      await client.close();
    }
  });

  it('createEvents retries the 429s item by item until every event is in, once each', async () => {
    const client = new Client({ node: node!.url, requestTimeout: 30_000 });
    const seen = countItemStatuses(client);
    const store = new ElasticsearchDocumentStore(client, options, silent);
    try {
      // 16 callers at once, 25 events of ~1 KB each: one bulk alone fits the limit, all
      // of them together do not, and the write queue overflows.
      const batches = Array.from({ length: 16 }, (_, b) =>
        Array.from({ length: 25 }, (_, i) => event(`ev-${b}-${i}`, { data: { pad: 'y'.repeat(1000) } })),
      );
      const results = await Promise.all(batches.map((batch) => store.createEvents(batch)));

      // Every event created exactly once: an item that had succeeded and was sent again
      // would have come back 'exists' (a 409 on create).
      expect(results.flat()).toEqual(batches.flat().map(() => ({ status: 'created' })));
      expect(seen.counts.get(409) ?? 0).toBe(0);
      // The pressure was real, and some bulk was only partly refused.
      expect(seen.counts.get(429) ?? 0).toBeGreaterThan(0);
      expect(seen.bulks.some((s) => s.includes(201) && s.includes(429))).toBe(true);

      await es.indices.refresh({ index: eventsIndex });
      const ids = batches.flat().map((e) => e.id);
      expect((await es.count({ index: eventsIndex, query: { ids: { values: ids } } })).count).toBe(
        ids.length,
      );
    } finally {
      await client.close();
    }
  });

  it('mergeProfiles retries the 429s until every profile is merged', async () => {
    const client = new Client({ node: node!.url, requestTimeout: 30_000 });
    const seen = countItemStatuses(client);
    const store = new ElasticsearchDocumentStore(client, options, silent);
    try {
      const updates = (round: number) =>
        Array.from({ length: 16 }, (_, b) =>
          Array.from({ length: 10 }, (_, i) =>
            profile(`p-${b}-${i}`, `${round}-${b}-${i}`, round, {
              [`r${round}`]: round,
              pad: 'z'.repeat(500),
            }),
          ),
        );
      const first = updates(1);
      const second = updates(2);
      for (const round of [first, second]) {
        const results = await Promise.all(round.map((batch) => store.mergeProfiles(batch.map(one))));
        expect(results.flat()).toEqual(round.flat().map(() => ({ status: 'applied' })));
      }
      expect(seen.counts.get(429) ?? 0).toBeGreaterThan(0);

      const ids = first.flat().map((u) => u.clientId);
      const res = await es.mget<ProfileDocument>({ index: profilesIndex, ids });
      for (const d of res.docs) {
        expect('_source' in d && d._source).toMatchObject({ version: 2, data: { r1: 1, r2: 2 } });
      }
    } finally {
      await client.close();
    }
  });
});
