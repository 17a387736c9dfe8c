import { errors } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../../../harness/prometheus-text.js';
import { WorkerMetrics } from '../../../../src/metrics/worker-metrics.js';
import { createRetryPolicy } from '../../../../src/retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../../../../src/sinks/elasticsearch/document-store.js';
import { requestRetryReason } from '../../../../src/sinks/elasticsearch/observer.js';
import { FlakyBulkClient } from '../../../support/fakes/flaky-bulk-client.js';
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

function store(client: FlakyBulkClient) {
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  const { log, lines } = capturedLog('info');
  const s = new ElasticsearchDocumentStore(
    client as never,
    {
      profilesIndex: 'p',
      eventsIndex: 'e',
      retry: createRetryPolicy({ baseMs: 1, maxMs: 1 }),
      observer: metrics.elasticsearchObserver(),
    },
    log,
  );
  const value = async (name: string, labels = {}) =>
    sampleValue(parsePrometheusText(await metrics.registry.metrics()), name, labels);
  return { s, lines, value };
}

describe('ElasticsearchDocumentStore: what it reports', () => {
  it('logs a run of failed bulk requests as one line and one recovery, and counts every retry', async () => {
    const client = new FlakyBulkClient(30);
    const { s, lines, value } = store(client);
    expect(await s.createEvents([event('a'), event('b')])).toEqual([
      { status: 'created' },
      { status: 'created' },
    ]);
    expect(client.calls).toBe(31);
    // One line for the whole run of failures, however many retries it took; recovery is said
    // by the first batch that goes through without a retry (not by each batch that needed some).
    expect(lines.map((l) => l.state)).toEqual(['failing']);
    await s.createEvents([event('c')]);
    expect(lines.map((l) => l.state)).toEqual(['failing', 'recovered']);
    expect(lines[1]!.msg).toBe('Elasticsearch: event writes succeed again after 30 failed attempts over 0 s');
    // Retries count documents that went round again: 2 events × 30 failed requests.
    expect(await value('rxingest_retries_total', { target: 'elasticsearch', reason: 'connection' })).toBe(60);
    expect(await value('rxingest_es_request_duration_seconds_count', { op: 'bulk' })).toBe(32);
  });

  it('counts 409s on create as known events, and item 429s as retries', async () => {
    const client = new FlakyBulkClient(0, [[409, 429, 201], [201]]);
    const { s, value } = store(client);
    const written = await s.createEvents([event('a'), event('b'), event('c')]);
    expect(written).toEqual([
      { status: 'exists', owner: 'in/0/0' },
      { status: 'created' },
      { status: 'created' },
    ]);
    expect(await value('rxingest_es_conflicts_total', { kind: 'event-exists' })).toBe(1);
    expect(await value('rxingest_retries_total', { target: 'elasticsearch', reason: 'item-429' })).toBe(1);
  });

  it('names why a whole request is retried with a bounded word', () => {
    expect(requestRetryReason(new errors.TimeoutError('t'))).toBe('timeout');
    expect(requestRetryReason(new errors.ConnectionError('c'))).toBe('connection');
    expect(requestRetryReason(new errors.NoLivingConnectionsError('n', {} as never))).toBe(
      'no-living-connections',
    );
    const status = (statusCode: number) =>
      new errors.ResponseError({ body: {}, statusCode, headers: {}, warnings: null, meta: {} as never });
    expect(requestRetryReason(status(429))).toBe('status-429');
    expect(requestRetryReason(status(503))).toBe('status-5xx');
  });
});
