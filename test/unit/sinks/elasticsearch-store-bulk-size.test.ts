import { errors } from '@elastic/elasticsearch';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createRetryPolicy } from '../../../src/retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../../../src/sinks/elasticsearch-document-store.js';
import { bulkLines } from '../../support/bulk-body.js';

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
  async bulk({ operations: body }: { operations: string }) {
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
      async bulk({ operations: body }: { operations: string }) {
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
