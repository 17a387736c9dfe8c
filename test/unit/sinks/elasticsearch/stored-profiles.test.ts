import type { Client } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { mergeUpdates } from '../../../../src/model/profile-merge.js';
import { silentObserver } from '../../../../src/sinks/elasticsearch/observer.js';
import { type RequestContext, ungated } from '../../../../src/sinks/elasticsearch/request.js';
import { StoredProfiles } from '../../../../src/sinks/elasticsearch/stored-profiles.js';

type Doc = {
  _id: string;
  found: boolean;
  _source?: object;
  _seq_no?: number;
  _primary_term?: number;
  error?: object;
};

/** An `mget` endpoint answered by hand; a client named `broken-…` answers with a per-document error. */
function mgetEndpoint() {
  const requests: { ids: string[]; answer: () => void }[] = [];
  const client = {
    mget: ({ ids }: { ids: string[] }) =>
      new Promise<{ docs: Doc[] }>((resolve) => {
        const docs = ids.map((id, k): Doc => {
          if (id.startsWith('broken-'))
            return {
              _id: id,
              found: false,
              error: { type: 'no_shard_available_action_exception', reason: 'x' },
            };
          return {
            _id: id,
            found: true,
            _source: {
              clientId: id,
              version: 1,
              data: { a: id },
              fieldVersions: { a: { version: 1, id: 'u' } },
            },
            _seq_no: 100 + k,
            _primary_term: 1,
          };
        });
        requests.push({ ids, answer: () => resolve({ docs }) });
      }),
  } as unknown as Client;
  return { client, requests };
}

const context = (): RequestContext => ({
  op: 'mget',
  gate: ungated,
  observer: silentObserver,
  signal: undefined,
});
const updateOf = (clientId: string) =>
  mergeUpdates([
    {
      type: 'profile',
      id: `${clientId}-2`,
      clientId,
      version: 2,
      ts: '2026-12-06T00:00:00Z',
      data: { a: 2 },
    },
  ]);
const flush = () => new Promise((r) => setImmediate(r));
/** Reads of this client, one mget out at once: the next callers' reads wait and share one. */
const oneReadAtOnce = (client: Client) =>
  new StoredProfiles(client, 'profiles', undefined, context, { maxItems: 4_000, lanes: 1 });

describe('StoredProfiles: the reads of every partition share mgets', () => {
  it('merges the reads that arrive while one is out into the next mget and gives each caller its own documents', async () => {
    const e = mgetEndpoint();
    const profiles = oneReadAtOnce(e.client);
    const a = profiles.current([updateOf('a1')]);
    const b = profiles.current([updateOf('b1'), updateOf('b2')]);
    const c = profiles.current([updateOf('c1')]);
    await flush();
    expect(
      e.requests.map((r) => r.ids),
      'b and c wait for a',
    ).toEqual([['a1']]);
    e.requests[0]!.answer();
    await flush();
    expect(e.requests.map((r) => r.ids)).toEqual([['a1'], ['b1', 'b2', 'c1']]);
    e.requests[1]!.answer();
    const [ra, rb, rc] = await Promise.all([a, b, c]);
    const seen = (r: typeof ra) => (r.done ? r.value.stored.map((s) => [s.doc?.clientId, s.seqNo]) : r.why);
    expect(seen(ra)).toEqual([['a1', 100]]);
    expect(seen(rb)).toEqual([
      ['b1', 100],
      ['b2', 101],
    ]);
    expect(seen(rc)).toEqual([['c1', 102]]);
  });

  it("a document error in a shared mget fails only the read of the caller it belongs to (the destination's, retried)", async () => {
    const e = mgetEndpoint();
    const profiles = oneReadAtOnce(e.client);
    const first = profiles.current([updateOf('first')]);
    const ok = profiles.current([updateOf('ok-1')]);
    const broken = profiles.current([updateOf('broken-1'), updateOf('ok-2')]);
    await flush();
    e.requests[0]!.answer();
    await flush();
    expect(e.requests[1]!.ids).toEqual(['ok-1', 'broken-1', 'ok-2']);
    e.requests[1]!.answer();
    expect((await first).done).toBe(true);
    const r = await ok;
    expect(r.done && r.value.stored.map((s) => s.doc?.clientId)).toEqual(['ok-1']);
    expect(await broken).toMatchObject({ done: false, reason: 'mget-doc-error' });
  });
});
