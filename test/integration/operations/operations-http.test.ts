import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../harness/ports.js';
import {
  type ParsedText,
  parsePrometheusText,
  samples,
  sampleValue,
  sumOf,
} from '../../../harness/prometheus-text.js';
import { createTopics, kafkaClient, stackEnv, uniqueName, waitFor } from '../../../harness/stack.js';
import { spawnWorker, type WorkerProcess } from '../../../harness/worker/process.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload } from '../../../src/generator/workload.js';
import { CONTRACT_METRICS } from '../../support/metrics/contract-metrics.js';
import { KafkaProxy } from '../../support/servers/kafka-proxy.js';
import { TcpProxy } from '../../support/servers/tcp-proxy.js';

/**
 * The worker's HTTP server against the real Kafka, Elasticsearch and Redis:
 * /readyz before joining, when ready, with Kafka unreachable and with Elasticsearch
 * unreachable (the worker's KAFKA_BROKERS and ES_NODE are proxies the test shuts; the
 * Kafka one also stands in the broker's address in Metadata answers, so the worker has no
 * other way to the broker); /metrics scraped while it ingests; an address in use.
 */
const kafka = kafkaClient();
const name = uniqueName('ops');
const topic = `${name}.in`;
let proxy: TcpProxy;
let kafkaProxy: KafkaProxy;
let port: number;
let worker: WorkerProcess;
let sentBefore = 0;

const get = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, text: await res.text() };
};
const scrape = async (): Promise<ParsedText> => parsePrometheusText((await get('/metrics')).text);
const readyz = async () => {
  const r = await get('/readyz');
  return {
    status: r.status,
    body: JSON.parse(r.text) as {
      ready: boolean;
      reason?: string;
      checks: Record<'joined' | 'elasticsearch' | 'kafka', { ok: boolean; reason?: string }>;
    },
  };
};
const log = () => readFileSync(worker.logFile, 'utf8');

/**
 * A contract metric has series in these scrapes, each with exactly the contract's labels (a
 * histogram's _count and _sum; its buckets with `le` besides): a labelled metric without a
 * series, or with a label renamed, added or dropped, fails.
 */
function expectContractSeries(scrapes: readonly ParsedText[], metric: string) {
  const labels = [...CONTRACT_METRICS[metric]!].sort();
  const histogram = scrapes.some((s) => s.types.get(metric) === 'histogram');
  const parts = histogram ? ['_count', '_sum', '_bucket'] : [''];
  for (const part of parts) {
    const series = scrapes.flatMap((s) => samples(s, `${metric}${part}`));
    expect(series.length, `${metric}${part}: series`).toBeGreaterThan(0);
    const want = part === '_bucket' ? [...labels, 'le'].sort() : labels;
    for (const x of series) expect(Object.keys(x.labels).sort(), `${metric}${part} labels`).toEqual(want);
  }
}

async function committedToEnd() {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId: `${name}-group`, topics: [topic] }),
    ]);
    const c = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
    return ends.every((e) => c.get(e.partition) === e.high);
  } finally {
    await admin.disconnect();
  }
}

/** `ageMs`: the messages' `ts` lies that far before they are sent. */
async function produce(count: number, seed: number, ageMs = 0) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const records = planWorkload({
      seed,
      count,
      ratePerSec: 2_000,
      clients: 100,
      poisonShare: 0.02,
      poisonKinds: ['invalid-json', 'missing-field', 'wrong-type'],
      // A message's ts is baseTimeMs plus its planned send time (the producer keeps to the plan).
      baseTimeMs: Date.now() - ageMs,
    });
    return (await runProducer({ topic, records }, { producer })).total;
  } finally {
    await producer.disconnect();
  }
}

beforeAll(async () => {
  proxy = await TcpProxy.to(stackEnv.esNode);
  kafkaProxy = await KafkaProxy.to(stackEnv.kafkaBrokers);
  port = await freePort();
  worker = spawnWorker(
    {
      INGEST_TOPICS: topic,
      INGEST_GROUP: `${name}-group`,
      DLQ_TOPIC: `${name}.dlq`,
      TRIGGERS_TOPIC: `${name}.triggers`,
      PROFILES_INDEX: `${name}-profiles`,
      EVENTS_INDEX: `${name}-events`,
      TRIGGER_RULES: join(process.cwd(), 'examples', 'trigger-rules.json'),
      KAFKA_BROKERS: kafkaProxy.brokers,
      ES_NODE: proxy.url,
      REDIS_URL: stackEnv.redisUrl,
      REDIS_KEY_PREFIX: `${name}:`,
      // The input topic appears only after the test has seen /readyz answer "not joined".
      KAFKA_TOPIC_WAIT_MS: '120000',
      // Everything else (commits, retries, session, the readiness checks) as shipped.
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
    },
    `${name}-worker`,
  );
});

afterAll(async () => {
  if (worker.child.exitCode === null) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  await proxy.shut();
  await kafkaProxy.shut();
});

describe('the HTTP server of a running worker', () => {
  it('answers /readyz 503 with a reason before the worker has joined its group, /healthz 200', async () => {
    const before = await waitFor('the HTTP server', () => readyz().catch(() => undefined), {
      timeoutMs: 60_000,
    });
    expect(before.status).toBe(503);
    expect(before.body.ready).toBe(false);
    expect(before.body.reason).toContain(`not yet joined the consumer group "${name}-group"`);
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ status: 'ok' });
  });

  it('stops a second worker on the same address with one clear line', async () => {
    const second = spawnWorker(
      { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port), KAFKA_BROKERS: stackEnv.kafkaBrokers },
      `${name}-second`,
    );
    expect(await second.exited).toBe(1);
    const stderrLines = readFileSync(second.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('rxingest:'));
    expect(stderrLines).toEqual([
      `rxingest: could not start: HTTP_HOST:HTTP_PORT 127.0.0.1:${port} is already in use (another rxingest worker?): ` +
        'choose another HTTP_PORT, or 0 to turn the HTTP server off',
    ]);
  });

  it('answers /readyz 200 once joined, with Elasticsearch and Kafka reachable', async () => {
    await createTopics([{ topic, numPartitions: 4 }]);
    const ready = await waitFor('ready', async () => {
      const r = await readyz();
      return r.status === 200 ? r : undefined;
    });
    expect(ready.body.ready).toBe(true);
  });

  it('exposes every contract metric while it ingests, and the counters and histograms move', async () => {
    const first = await scrape();
    // Every message's ts a minute before it is sent: the end-to-end latency must say so.
    const producing = produce(6_000, 7, 60_000);
    // Scrape while records are inside the graphs, not only after the fact.
    const during = await waitFor(
      'a scrape mid-ingest',
      async () => {
        const s = await scrape();
        const n = sampleValue(s, 'rxingest_records_in_total') ?? 0;
        return n > 0 && n < 6_000 ? s : undefined;
      },
      { intervalMs: 50 },
    );
    const sent = await producing;
    sentBefore = sent;
    await waitFor('every offset committed', () => committedToEnd());
    const last = await scrape();

    for (const metric of Object.keys(CONTRACT_METRICS)) {
      expect(during.types.has(metric), `${metric} in a scrape mid-ingest`).toBe(true);
      // Retries come with an outage: the outage tests below check that series.
      if (metric !== 'rxingest_retries_total') expectContractSeries([during, last], metric);
    }
    const moved = (metric: string, labels: Record<string, string> = {}) =>
      sumOf(last, metric, labels) - sumOf(first, metric, labels);
    expect(moved('rxingest_records_in_total')).toBe(sent);
    expect(moved('rxingest_records_done_total', { outcome: 'indexed' })).toBeGreaterThan(0);
    expect(moved('rxingest_records_done_total')).toBe(sent);
    expect(moved('rxingest_dead_letters_total')).toBe(
      moved('rxingest_records_done_total', { outcome: 'dead-letter' }),
    );
    expect(moved('rxingest_dead_letters_total')).toBeGreaterThan(0);
    expect(moved('rxingest_triggers_total')).toBeGreaterThan(0);
    expect(moved('rxingest_commits_total')).toBeGreaterThan(0);
    expect(moved('rxingest_commit_duration_seconds_count')).toBe(moved('rxingest_commits_total'));
    const latencies = moved('rxingest_e2e_latency_seconds_count');
    expect(latencies).toBe(moved('rxingest_records_done_total', { outcome: 'indexed' }));
    // From ts to indexed: a minute plus the time through the producer and the worker, for each.
    const meanLatency = moved('rxingest_e2e_latency_seconds_sum') / latencies;
    expect(meanLatency).toBeGreaterThanOrEqual(60);
    expect(meanLatency).toBeLessThan(90);
    expect(moved('rxingest_e2e_latency_seconds_bucket', { le: '60' }), 'observed under 60 s').toBe(0);
    expect(moved('rxingest_e2e_latency_seconds_bucket', { le: '120' }), 'observed under 120 s').toBe(
      latencies,
    );
    expect(moved('rxingest_es_request_duration_seconds_count', { op: 'bulk' })).toBeGreaterThan(0);
    expect(moved('rxingest_es_request_duration_seconds_count', { op: 'mget' })).toBeGreaterThan(0);
    // The latency split at the fetch: the minute is Kafka's part, and the parts add up to the whole.
    const part = (p: string, what: string, le?: string) =>
      moved(`rxingest_record_latency_seconds_${what}`, le === undefined ? { part: p } : { part: p, le });
    expect(part('kafka', 'count')).toBe(latencies);
    expect(part('worker', 'count')).toBe(latencies);
    expect(part('kafka', 'bucket', '60'), "Kafka's part under 60 s").toBe(0);
    expect(part('worker', 'bucket', '60'), "the worker's part under 60 s").toBe(latencies);
    expect(part('kafka', 'sum') + part('worker', 'sum')).toBeCloseTo(
      moved('rxingest_e2e_latency_seconds_sum'),
      1,
    );
    // Each stage's calls on the real Redis and Elasticsearch, timed; a write holds its requests.
    const stage = (s: string, what: string) => moved(`rxingest_stage_duration_seconds_${what}`, { stage: s });
    for (const s of ['redis-lookup', 'write-events', 'write-profiles', 'redis-marks'])
      expect(stage(s, 'count'), s).toBeGreaterThan(0);
    expect(stage('write-events', 'sum') + stage('write-profiles', 'sum')).toBeGreaterThanOrEqual(
      moved('rxingest_es_request_duration_seconds_sum', { op: 'bulk' }) * 0.99,
    );
    // Gauges the worker feeds: one series per assigned partition, the pool read from the real client.
    // (a partition's lag and in-flight series appear with its first batch; by the end all four had one)
    expect(
      samples(last, 'rxingest_consumer_lag')
        .map((s) => s.labels.partition)
        .sort(),
    ).toEqual(['0', '1', '2', '3']);
    expect(samples(last, 'rxingest_in_flight').map((s) => s.value)).toEqual([0, 0, 0, 0]);
    expect(samples(during, 'rxingest_partition_paused', { reason: 'starting' })).toHaveLength(4);
    expect(sampleValue(last, 'rxingest_es_pool_connections')).toBeGreaterThan(0);
    expect(sampleValue(last, 'rxingest_redis_up')).toBe(1);
    // The adaptive limit (ES_CONCURRENCY_INITIAL 4, between MIN 1 and MAX 32), not the pool size.
    const limit = sampleValue(last, 'rxingest_es_concurrency_limit')!;
    expect(limit).toBeGreaterThanOrEqual(1);
    expect(limit).toBeLessThanOrEqual(32);
    expect(sampleValue(last, 'rxingest_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(last.samples.some((s) => /client|^id$/i.test(Object.keys(s.labels).join(',')))).toBe(false);
  });

  it('answers /readyz 503 with a reason naming Kafka while Kafka is unreachable, and 200 once it is back', async () => {
    await kafkaProxy.shut();
    const down = await waitFor(
      'not ready',
      async () => {
        const r = await readyz();
        return r.status === 503 ? r : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(down.body.ready).toBe(false);
    expect(down.body.reason).toMatch(/Kafka/);
    // Kafka is the cause: Elasticsearch is still reachable.
    expect(down.body.checks.elasticsearch.ok).toBe(true);
    await kafkaProxy.open();
    await waitFor('ready again', async () => (await readyz()).status === 200, { timeoutMs: 90_000 });
  });

  it('answers /readyz 503 while Elasticsearch is unreachable, logs the outage as a few lines, and recovers', async () => {
    await proxy.shut();
    const down = await waitFor('not ready', async () => {
      const r = await readyz();
      return r.status === 503 ? r : undefined;
    });
    // The client meets the shut port either on a new connection (refused) or on a kept-alive
    // one the proxy closed as it shut; either way the reason names the cause and nothing else.
    expect(down.body.reason).toMatch(
      /^Elasticsearch unreachable: ConnectionError: (connect ECONNREFUSED 127\.0\.0\.1:\d+|other side closed - Local: 127\.0\.0\.1:\d+, Remote: 127\.0\.0\.1:\d+)$/,
    );
    const retriesBefore = sumOf(await scrape(), 'rxingest_retries_total', { target: 'elasticsearch' });
    const producing = produce(1_000, 8);
    await waitFor(
      'at least 20 retries against the shut port',
      async () =>
        sumOf(await scrape(), 'rxingest_retries_total', { target: 'elasticsearch' }) - retriesBefore >= 20,
    );
    expectContractSeries([await scrape()], 'rxingest_retries_total');
    expect(
      samples(await scrape(), 'rxingest_retries_total', { target: 'elasticsearch' }).length,
    ).toBeGreaterThan(0);
    await proxy.open();
    const sent = await producing;
    await waitFor('ready again', async () => (await readyz()).status === 200);
    await waitFor('the new records committed', () => committedToEnd());
    expect(sumOf(await scrape(), 'rxingest_records_done_total')).toBe(sentBefore + sent);
    const lines = log()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; check?: string });
    // One line per kind of write when it starts failing (events, profiles), one when it recovers.
    const failing = lines.filter((l) => /^Elasticsearch: \w+( \w+)? writes failing; retrying/.test(l.msg));
    const recovered = lines.filter((l) =>
      /^Elasticsearch: \w+( \w+)? writes succeed again after/.test(l.msg),
    );
    expect(failing.length).toBeGreaterThanOrEqual(1);
    expect(failing.length).toBeLessThanOrEqual(2);
    expect(recovered).toHaveLength(failing.length);
    expect(lines.filter((l) => l.check === 'elasticsearch' && l.msg.startsWith('not ready'))).toHaveLength(1);
  });

  it('drains on SIGTERM and exits 0, promptly after the outages', async () => {
    const at = Date.now();
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    // Nothing is in flight. The consumers' old members from the Kafka outage left their groups
    // with their sessions (6 s) long ago: a stop that waits on one of them (the control topic's
    // consumer did, 10-12 s with kafkajs's 30 s session) is a shutdown stuck on the outage.
    expect(Date.now() - at, 'ms from SIGTERM to exit').toBeLessThan(8_000);
  });
});
