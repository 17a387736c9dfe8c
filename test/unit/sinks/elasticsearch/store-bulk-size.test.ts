import { errors } from '@elastic/elasticsearch';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createRetryPolicy } from '../../../../src/retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../../../../src/sinks/elasticsearch/document-store.js';
import { bulkLines } from '../../../support/fakes/bulk-body.js';

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

/** An item refused by the indexing-pressure limit, as Elasticsearch words it. */
const PRIMARY_SHARE =
  'rejected execution of primary operation [shard_detail=[e][0], shard_max_coordinating_and_primary_bytes=65536, ' +
  'shard_coordinating_and_primary_bytes=0, shard_operation_bytes=70311, shard_max_replica_bytes=98304, ' +
  'coordinating_and_primary_bytes=70311, max_coordinating_and_primary_bytes=65536]';
/** An item refused because the write thread pool's queue was full. */
const QUEUE_FULL =
  'rejected execution of org.elasticsearch.action.support.replication.TransportWriteAction$1/WrappedActionListener ' +
  'on TaskExecutionTimeTrackingEsThreadPoolExecutor[name = node/write, queue capacity = 2, task execution EWMA = 1.2ms]';

/** A 200 bulk answer of `items` creates: every one refused with `refusal` (429), or all created. */
const bulkAnswer = (items: number, refusal: string | undefined) => ({
  items: Array.from({ length: items }, () => ({
    create:
      refusal === undefined
        ? { status: 201 }
        : { status: 429, error: { type: 'es_rejected_execution_exception', reason: refusal } },
  })),
});

/**
 * A cluster that takes at most `limit` items per request: above `2 × limit` it refuses the
 * request whole (429), above `limit` it answers 200 with every item refused (the primary's
 * share of the indexing-pressure limit), as the real one does (see the integration tests).
 */
class SizeLimitedCluster {
  readonly requests: number[] = [];
  constructor(private readonly limit: number) {}
  async bulk({ operations: body }: { operations: Buffer }) {
    const operations = bulkLines(body);
    const items = operations.length / 2;
    this.requests.push(items);
    if (items > 2 * this.limit) {
      throw new errors.ResponseError({
        statusCode: 429,
        body: {
          error: {
            type: 'es_rejected_execution_exception',
            reason: 'rejected execution of coordinating operation',
          },
        },
        headers: {},
        warnings: null,
        meta: {} as never,
      });
    }
    return bulkAnswer(items, items > this.limit ? PRIMARY_SHARE : undefined);
  }
}

const storeOn = (cluster: SizeLimitedCluster) =>
  new ElasticsearchDocumentStore(
    cluster as never,
    { profilesIndex: 'p', eventsIndex: 'e', retry: createRetryPolicy({ baseMs: 1, maxMs: 1 }) },
    pino({ level: 'silent' }),
  );

describe('ElasticsearchDocumentStore: bulks larger than the cluster takes', () => {
  it('halves its requests until they go through, and every item is written once', async () => {
    const cluster = new SizeLimitedCluster(10);
    const store = storeOn(cluster);
    const events = Array.from({ length: 100 }, (_, i) => event(`e-${i}`));
    expect(await store.createEvents(events, AbortSignal.timeout(5_000))).toEqual(
      events.map(() => ({ status: 'created' })),
    );
    // 100 refused whole, then 50s (200, every item refused), then 25s likewise, then ≤ 13s… until ≤ 10.
    expect(cluster.requests[0]).toBe(100);
    expect(Math.max(...cluster.requests.slice(-3))).toBeLessThanOrEqual(10);
  });

  it('remembers the size that goes through: the next batch is not sent whole again', async () => {
    const cluster = new SizeLimitedCluster(10);
    const store = storeOn(cluster);
    await store.createEvents(Array.from({ length: 100 }, (_, i) => event(`a-${i}`)));
    cluster.requests.length = 0;
    await store.createEvents(Array.from({ length: 40 }, (_, i) => event(`b-${i}`)));
    // At most one probe of twice the size that went through (the cap grows after a run of
    // successes), never the whole batch of 40.
    expect(Math.max(...cluster.requests)).toBeLessThanOrEqual(20);
    expect(cluster.requests.filter((n) => n > 10).length).toBeLessThanOrEqual(2);
  });

  it('grows its requests again after a run of them went through whole', async () => {
    const cluster = new SizeLimitedCluster(10);
    const store = storeOn(cluster);
    await store.createEvents(Array.from({ length: 100 }, (_, i) => event(`a-${i}`)));
    const cap = Math.max(...cluster.requests.slice(-1));
    // The cluster now takes more: after enough whole successes the requests get bigger.
    const roomier = cluster as unknown as { limit: number };
    roomier.limit = 1_000;
    for (let round = 0; round < 6; round++)
      await store.createEvents(Array.from({ length: 200 }, (_, i) => event(`c-${round}-${i}`)));
    expect(Math.max(...cluster.requests.slice(-3))).toBeGreaterThan(cap);
  });

  it('does not shrink its requests when every item is refused by a full write queue (size is not the cause)', async () => {
    let busy = 3;
    const requests: number[] = [];
    const cluster = {
      async bulk({ operations: body }: { operations: Buffer }) {
        const operations = bulkLines(body);
        const items = operations.length / 2;
        requests.push(items);
        return bulkAnswer(items, busy-- > 0 ? QUEUE_FULL : undefined);
      },
    };
    const store = storeOn(cluster as never);
    const events = Array.from({ length: 100 }, (_, i) => event(`q-${i}`));
    expect(await store.createEvents(events, AbortSignal.timeout(5_000))).toEqual(
      events.map(() => ({ status: 'created' })),
    );
    // Refused three times whole, then through: every request was the whole batch.
    expect(requests).toEqual([100, 100, 100, 100]);
  });
});

/** Elasticsearch 9's words for an operation over `indexing_pressure.memory.max_operation_size`. */
const oversized = (size: number, limit: number) =>
  `Request contains an operation of size [${size}] bytes, which exceeds the maximum allowed limit of [${limit}] bytes`;

/**
 * A one-shard node with a largest operation it takes (`maxOperation` bytes of source), as
 * Elasticsearch 9 checks it: per shard request, so every item of a request that holds one
 * larger document is refused (429) with the size of the largest, the small ones too; and
 * optionally an `http.max_content_length` (`maxRequest` bytes of body: 413, no body).
 * It counts what it created per id, so a document written twice would show.
 */
class OperationLimitedNode {
  readonly requests: number[] = [];
  readonly created = new Map<string, number>();
  constructor(
    private readonly maxOperation: number,
    private readonly maxRequest = Number.POSITIVE_INFINITY,
  ) {}
  async bulk({ operations: body }: { operations: Buffer }) {
    const lines = bulkLines(body);
    this.requests.push(lines.length / 2);
    if (body.length > this.maxRequest) {
      throw new errors.ResponseError({
        statusCode: 413,
        body: '',
        headers: {},
        warnings: null,
        meta: {} as never,
      });
    }
    const sizes = lines.filter((_, i) => i % 2 === 1).map((s) => JSON.stringify(s).length);
    const largest = Math.max(...sizes);
    return {
      items: lines
        .filter((_, i) => i % 2 === 0)
        .map((action) => {
          const id = (action as { create: { _id: string } }).create._id;
          if (largest > this.maxOperation)
            return {
              create: {
                status: 429,
                error: {
                  type: 'es_rejected_execution_exception',
                  reason: oversized(largest, this.maxOperation),
                },
              },
            };
          this.created.set(id, (this.created.get(id) ?? 0) + 1);
          return { create: { status: 201 } };
        }),
    };
  }
}

const withPad = (id: string, bytes: number) => {
  const e = event(id);
  return { ...e, source: { ...e.source, data: { pad: 'x'.repeat(bytes) } } };
};

describe('ElasticsearchDocumentStore: a document larger than the node takes', () => {
  it('isolates documents over max_operation_size (their whole shard request is refused): they are rejected, the others written once', async () => {
    const node = new OperationLimitedNode(2_000);
    const store = storeOn(node as never);
    const large = new Set([7, 23]);
    const events = Array.from({ length: 40 }, (_, i) => withPad(`o-${i}`, large.has(i) ? 5_000 : 100));
    const results = await store.createEvents(events, AbortSignal.timeout(5_000));
    events.forEach((e, i) => {
      if (large.has(i)) {
        expect(results[i]).toMatchObject({ status: 'rejected' });
        expect((results[i] as { reason: string }).reason).toMatch(
          /^Elasticsearch 429 es_rejected_execution_exception: Request contains an operation of size \[\d+\] bytes, which exceeds the maximum allowed limit of \[2000\] bytes$/,
        );
      } else expect(results[i], e.id).toEqual({ status: 'created' });
    });
    expect(node.created.size).toBe(38);
    expect([...node.created.values()].every((n) => n === 1)).toBe(true);
    // Halving finds each large one in a few requests, not one request per document.
    expect(node.requests.length).toBeLessThanOrEqual(1 + 2 * 2 * Math.ceil(Math.log2(40)));
  });

  it('rejects a document that a request of it alone exceeds http.max_content_length with (413), and writes the others', async () => {
    const node = new OperationLimitedNode(Number.POSITIVE_INFINITY, 4_000);
    const store = storeOn(node as never);
    const events = Array.from({ length: 10 }, (_, i) => withPad(`m-${i}`, i === 4 ? 6_000 : 100));
    const results = await store.createEvents(events, AbortSignal.timeout(5_000));
    expect(results[4]).toEqual({
      status: 'rejected',
      reason:
        "Elasticsearch 413 request_entity_too_large: a _bulk request of this document alone was refused whole (413): it is larger than the node's http.max_content_length",
    });
    expect(results.filter((r) => r.status === 'created')).toHaveLength(9);
    expect([...node.created.values()].every((n) => n === 1)).toBe(true);
  });
});
