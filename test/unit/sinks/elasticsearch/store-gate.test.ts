import { describe, expect, it } from 'vitest';
import { createRetryPolicy } from '../../../../src/retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../../../../src/sinks/elasticsearch/document-store.js';
import { mgetOutcome } from '../../../../src/sinks/elasticsearch/request-outcome.js';
import { FlakyBulkClient } from '../../../support/fakes/flaky-bulk-client.js';
import { RecordingGate } from '../../../support/fakes/recording-gate.js';
import { capturedLog } from '../../../support/logs/captured-log.js';

const event = (id: string) => ({
  id,
  source: {
    clientId: 'c',
    name: 'n',
    ts: '2026-01-01T00:00:00Z',
    data: {},
    origin: { topic: 'in', partition: 0, offset: 1 },
  },
});

function store(client: unknown, gate: RecordingGate) {
  return new ElasticsearchDocumentStore(
    client as never,
    { profilesIndex: 'p', eventsIndex: 'e', retry: createRetryPolicy({ baseMs: 1, maxMs: 1 }), gate },
    capturedLog('fatal').log,
  );
}

describe('ElasticsearchDocumentStore behind a RequestGate', () => {
  it('takes one pass per bulk and mget, retries included, and reports every outcome', async () => {
    // Two connection errors, then an answer with a 409 (an mget reads its owner) and an item 429.
    const client = new FlakyBulkClient(2, [[409, 429, 201], [201]]);
    const gate = new RecordingGate();
    const written = await store(client, gate).createEvents([event('a'), event('b'), event('c')]);
    expect(written.map((w) => w.status)).toEqual(['exists', 'created', 'created']);
    expect(gate.acquired).toBe(client.calls);
    expect(gate.inFlight).toBe(0);
    // bulk ×2 refused, bulk with an item 429 inside its 200, the mget, the retried bulk.
    expect(gate.outcomes).toEqual(['failed', 'failed', 'pushback', 'ok', 'ok']);
  });

  it('sends nothing while the gate is shut (an open breaker) and goes on once it opens', async () => {
    const client = new FlakyBulkClient(0);
    const gate = new RecordingGate();
    gate.close();
    const writing = store(client, gate).createEvents([event('a')]);
    await new Promise((r) => setImmediate(r));
    expect(gate.waiters).toBe(1);
    expect(client.calls).toBe(0);
    gate.open();
    expect(await writing).toEqual([{ status: 'created' }]);
    expect(client.calls).toBe(1);
  });

  it('an abort while waiting for a pass rejects with its reason and sends nothing', async () => {
    const client = new FlakyBulkClient(0);
    const gate = new RecordingGate();
    gate.close();
    const abort = new AbortController();
    const writing = store(client, gate).createEvents([event('a')], abort.signal);
    await new Promise((r) => setImmediate(r));
    abort.abort(new Error('partition revoked'));
    await expect(writing).rejects.toThrow('partition revoked');
    expect(client.calls).toBe(0);
    expect(gate.waiters).toBe(0);
  });

  it('a request bug (400) gives its pass back as ok and is thrown', async () => {
    const { errors } = await import('@elastic/elasticsearch');
    const client = {
      bulk: async () => {
        throw new errors.ResponseError({
          body: { error: { type: 'parse_exception' } },
          statusCode: 400,
          headers: {},
          warnings: null,
          meta: {} as never,
        });
      },
    };
    const gate = new RecordingGate();
    await expect(store(client, gate).createEvents([event('a')])).rejects.toThrow();
    expect(gate.outcomes).toEqual(['ok']);
    expect(gate.inFlight).toBe(0);
  });
});

describe('mgetOutcome', () => {
  it('is failed only when every document came back with an error', () => {
    const err = { _id: 'a', error: { type: 'unavailable_shards_exception' } };
    const found = { _id: 'b', found: true };
    expect(mgetOutcome([err, err])).toBe('failed');
    expect(mgetOutcome([err, found])).toBe('ok');
    expect(mgetOutcome([])).toBe('ok');
  });
});
