import { randomBytes } from 'node:crypto';
import type { Client } from '@elastic/elasticsearch';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName, waitFor } from '../../../harness/stack.js';
import { createElasticsearch } from '../../../src/clients/elasticsearch.js';
import { mergeUpdates } from '../../../src/model/profile-merge.js';
import { createRetryPolicy } from '../../../src/retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../../../src/sinks/elasticsearch/document-store.js';
import { eventsMapping, profilesMapping } from '../../../src/worker/elasticsearch-setup.js';
import { eventDocuments } from '../../support/data/event-documents.js';
import { type SecureStack, secureStack } from '../../support/servers/secure-stack.js';

/**
 * A privilege lost while the worker writes is the destination's fault (contract, "Output:
 * Elasticsearch"): ElasticsearchDocumentStore on the secured stack, as a user of the native
 * realm whose role the test changes under it (the role cache is cleared on every change).
 * Taken away on one index, the bulk answers 200 with that index's items refused 403
 * `security_exception`; taken away everywhere, whole requests (bulk and mget) are refused 403.
 * Either way the writes wait, and land once the privilege is given back.
 */

const WRITER = ['read', 'index', 'create_index', 'view_index_metadata'];
const READER = ['read', 'view_index_metadata'];

const event = eventDocuments();
const update = (clientId: string, id: string, data: Record<string, unknown>) =>
  mergeUpdates([{ type: 'profile', id, clientId, version: 1, ts: '2026-11-30T12:00:00.000Z', data }]);

/** A promise and whether it has settled yet: a write that waits has not. */
function tracked<T>(promise: Promise<T>): { readonly promise: Promise<T>; readonly settled: boolean } {
  const t = { promise, settled: false };
  const settle = () => {
    t.settled = true;
  };
  promise.then(settle, settle);
  return t;
}

describe('ElasticsearchDocumentStore on the secured stack: a lost privilege is never the record’s fault', () => {
  let s: SecureStack;
  let admin: Client;
  let writer: Client;
  let store: ElasticsearchDocumentStore;
  const name = uniqueName('rxingest-privilege');
  const indices = { profiles: `${name}-profiles`, events: `${name}-events` };
  const password = randomBytes(18).toString('base64url');
  /** What the writer's role grants now, per index. */
  const grant = (privileges: { profiles: string[]; events: string[] }) =>
    admin.security.putRole({
      name,
      indices: [
        { names: [indices.profiles], privileges: privileges.profiles },
        { names: [indices.events], privileges: privileges.events },
      ].filter((i) => i.privileges.length > 0),
    });
  /** Item errors (type → count) and whole requests refused 403 (path → count) the writer saw. */
  const itemErrors = new Map<string, number>();
  const refused = new Map<string, number>();

  beforeAll(async () => {
    s = await secureStack();
    const node = s.elasticsearch.node;
    admin = createElasticsearch(
      {
        node,
        auth: { username: s.elasticsearch.adminUser, password: s.elasticsearch.adminPassword },
        caCert: s.certs.ca,
      },
      { requestTimeout: 30_000 },
    );
    await admin.indices.create({
      index: indices.profiles,
      mappings: structuredClone(profilesMapping) as never,
    });
    await admin.indices.create({ index: indices.events, mappings: structuredClone(eventsMapping) as never });
    await grant({ profiles: WRITER, events: WRITER });
    await admin.security.putUser({ username: name, password, roles: [name] });
    // As the worker's client: no retries of its own.
    writer = createElasticsearch(
      { node, auth: { username: name, password }, caCert: s.certs.ca },
      { requestTimeout: 10_000, maxRetries: 0 },
    );
    writer.diagnostic.on('response', (err, result) => {
      const body = (result ?? (err as { meta?: typeof result } | null)?.meta)?.body as
        | { items?: Record<string, { error?: { type?: string } }>[]; error?: { type?: string } }
        | undefined;
      for (const item of body?.items ?? []) {
        const type = Object.values(item)[0]?.error?.type;
        if (type) itemErrors.set(type, (itemErrors.get(type) ?? 0) + 1);
      }
      const path = result?.meta.request.params.path ?? '';
      if (result?.statusCode === 403 && body?.error?.type === 'security_exception') {
        const op = path.endsWith('/_bulk') ? 'bulk' : path.endsWith('/_mget') ? 'mget' : path;
        refused.set(op, (refused.get(op) ?? 0) + 1);
      }
    });
    store = new ElasticsearchDocumentStore(
      writer,
      {
        profilesIndex: indices.profiles,
        eventsIndex: indices.events,
        retry: createRetryPolicy({ baseMs: 20, maxMs: 200 }),
      },
      pino({ level: 'silent' }),
    );
  });

  afterAll(async () => {
    await admin?.security.deleteUser({ username: name }).catch(() => undefined);
    await admin?.security.deleteRole({ name }).catch(() => undefined);
    await admin?.indices
      .delete({ index: [indices.profiles, indices.events], ignore_unavailable: true })
      .catch(() => undefined);
    await writer?.close();
    await admin?.close();
  });

  it('items refused 403 security_exception (write taken away on the events index mid-run) wait, and land once it is given back', async () => {
    expect(await store.createEvents([event('before')])).toEqual([{ status: 'created' }]);
    await grant({ profiles: WRITER, events: READER });
    try {
      const before = itemErrors.get('security_exception') ?? 0;
      const events = [event('lost-1'), event('lost-2')];
      const writing = tracked(store.createEvents(events));
      // The other index keeps its privilege: its writes go on meanwhile.
      expect(await store.mergeProfiles([update('kept', 'k-1', { plan: 'pro' })])).toEqual([
        { status: 'applied' },
      ]);
      await waitFor(
        'event items refused 403 security_exception',
        () => (itemErrors.get('security_exception') ?? 0) >= before + 4,
        { timeoutMs: 10_000, intervalMs: 20 },
      );
      expect(writing.settled, 'the event writes wait while the privilege is lost').toBe(false);
      await grant({ profiles: WRITER, events: WRITER });
      expect(await writing.promise).toEqual([{ status: 'created' }, { status: 'created' }]);
      const res = await admin.mget({ index: indices.events, ids: ['before', 'lost-1', 'lost-2'] });
      expect(res.docs.map((d) => 'found' in d && d.found)).toEqual([true, true, true]);
    } finally {
      await grant({ profiles: WRITER, events: WRITER });
    }
  });

  it('requests refused whole with 403 (every privilege taken away: bulk and mget) wait, and land once it is given back', async () => {
    await grant({ profiles: [], events: [] });
    try {
      const events = [event('none-1'), event('none-2')];
      const writing = tracked(
        Promise.all([
          store.createEvents(events),
          store.mergeProfiles([update('none', 'n-1', { plan: 'team' })]),
        ]),
      );
      await waitFor(
        'bulks and mgets refused 403 security_exception',
        () => (refused.get('bulk') ?? 0) >= 2 && (refused.get('mget') ?? 0) >= 2,
        { timeoutMs: 10_000, intervalMs: 20 },
      );
      expect(writing.settled, 'the writes wait while every privilege is lost').toBe(false);
      await grant({ profiles: WRITER, events: WRITER });
      const [eventResults, profileResults] = await writing.promise;
      expect(eventResults).toEqual([{ status: 'created' }, { status: 'created' }]);
      expect(profileResults).toEqual([{ status: 'applied' }]);
      const doc = await admin.get<{ data: unknown }>({ index: indices.profiles, id: 'none' });
      expect(doc._source?.data).toEqual({ plan: 'team' });
    } finally {
      await grant({ profiles: WRITER, events: WRITER });
    }
  });
});
