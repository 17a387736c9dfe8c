import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../../harness/prometheus-text.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import { CONTRACT_METRICS } from '../../support/metrics/contract-metrics.js';

const metricsWith = () =>
  new WorkerMetrics({ topics: ['in.a', 'in.b'], esMaxConnections: 256, defaultMetrics: false });

describe('WorkerMetrics', () => {
  it('registers every metric the contract names, with its labels', async () => {
    const m = metricsWith();
    const byName = new Map((await m.registry.getMetricsAsJSON()).map((x) => [x.name, x]));
    for (const [name, labels] of Object.entries(CONTRACT_METRICS)) {
      expect(byName.has(name), name).toBe(true);
      // prom-client keeps labelNames on the metric object.
      const metric = m.registry.getSingleMetric(name) as unknown as { labelNames: string[] };
      expect([...metric.labelNames].sort(), name).toEqual([...labels].sort());
    }
  });

  it('starts with values a dashboard can show before anything happened', async () => {
    const text = parsePrometheusText(await metricsWith().registry.metrics());
    expect(sampleValue(text, 'rxingest_records_done_total', { outcome: 'indexed' })).toBe(0);
    expect(sampleValue(text, 'rxingest_dead_letters_total', { class: 'schema' })).toBe(0);
    expect(sampleValue(text, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);
    expect(sampleValue(text, 'rxingest_topic_shed', { topic: 'in.b' })).toBe(0);
    expect(sampleValue(text, 'rxingest_es_concurrency_limit')).toBe(256);
    expect(sampleValue(text, 'rxingest_redis_up')).toBe(0);
    expect(sampleValue(text, 'rxingest_hot_clients')).toBe(0);
    expect(sampleValue(text, 'rxingest_es_request_duration_seconds_count', { op: 'mget' })).toBe(0);
    expect(sampleValue(text, 'rxingest_record_latency_seconds_count', { part: 'worker' })).toBe(0);
    expect(sampleValue(text, 'rxingest_stage_duration_seconds_count', { stage: 'redis-marks' })).toBe(0);
  });

  it('exposes setters for the components that own breakers, limits, shedding, Redis and hot clients', async () => {
    const m = metricsWith();
    m.setBreakerState('elasticsearch', 'open');
    m.setBreakerState('redis', 'half-open');
    m.setEsConcurrencyLimit(12);
    m.setTopicShed('in.a', true);
    m.setRedisUp(true);
    m.setHotClients(3);
    m.countRetries('redis', 'timeout', 2);
    m.countRedisErrors('claim');
    m.setEsPool({ utilization: 0.5, queued: 7, connections: 4 });
    const text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
    expect(sampleValue(text, 'rxingest_breaker_state', { target: 'redis' })).toBe(1);
    expect(sampleValue(text, 'rxingest_es_concurrency_limit')).toBe(12);
    expect(sampleValue(text, 'rxingest_topic_shed', { topic: 'in.a' })).toBe(1);
    expect(sampleValue(text, 'rxingest_redis_up')).toBe(1);
    expect(sampleValue(text, 'rxingest_hot_clients')).toBe(3);
    expect(sampleValue(text, 'rxingest_retries_total', { target: 'redis', reason: 'timeout' })).toBe(2);
    expect(sampleValue(text, 'rxingest_redis_errors_total', { op: 'claim' })).toBe(1);
    expect(sampleValue(text, 'rxingest_es_pool_utilization')).toBe(0.5);
    expect(sampleValue(text, 'rxingest_es_pool_queued')).toBe(7);
  });

  it("has one writer of rxingest_consumer_lag, the broker's sample, and says so in its help", async () => {
    const m = metricsWith();
    const p = { topic: 'in.a', partition: '0' };
    // What a partition runner writes about its partition leaves the lag alone.
    m.setInFlight(p, 40, 4_000);
    m.setPartitionStalled(p, true);
    m.setPartitionPaused(p, 'backpressure', true);
    let text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_consumer_lag', p)).toBeUndefined();
    expect(sampleValue(text, 'rxingest_in_flight', p)).toBe(40);

    m.setConsumerLag(p, 120);
    m.setInFlight(p, 0, 0);
    text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_consumer_lag', p)).toBe(120);
    expect((await m.snapshot()).lag).toBe(120);
    expect(await m.registry.metrics()).toMatch(
      /# HELP rxingest_consumer_lag .*as the broker reports them every LAG_INTERVAL_MS/,
    );
  });

  it('forgets a partition that left: its in-flight, lag and stall series go, its pause series stays', async () => {
    const m = metricsWith();
    const gone = { topic: 'in.a', partition: '0' };
    const kept = { topic: 'in.a', partition: '1' };
    for (const p of [gone, kept]) {
      m.setInFlight(p, 1, 10);
      m.setConsumerLag(p, 5);
      m.setPartitionStalled(p, false);
      m.setPartitionPaused(p, 'starting', false);
    }
    m.forgetPartition(gone);
    const text = parsePrometheusText(await m.registry.metrics());
    for (const name of [
      'rxingest_in_flight',
      'rxingest_in_flight_bytes',
      'rxingest_consumer_lag',
      'rxingest_partition_stalled',
    ]) {
      expect(sampleValue(text, name, gone), name).toBeUndefined();
      expect(sampleValue(text, name, kept), name).toBeDefined();
    }
    expect(sampleValue(text, 'rxingest_partition_paused', { ...gone, reason: 'starting' })).toBe(0);
  });

  it('counts partition restarts by reason, fenced partitions, and commit durations', async () => {
    const m = metricsWith();
    m.countPartitionRestart('fenced');
    m.countPartitionRestart('fenced');
    m.countPartitionFenced();
    m.observeCommitDuration(0.2);
    const text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_partition_restarts_total', { reason: 'fenced' })).toBe(2);
    expect(sampleValue(text, 'rxingest_partitions_fenced_total')).toBe(1);
    expect(sampleValue(text, 'rxingest_commit_duration_seconds_count')).toBe(1);
    expect(sampleValue(text, 'rxingest_commit_duration_seconds_sum')).toBeCloseTo(0.2);
  });

  it('counts a commit, its triggers and its dead letters by class', async () => {
    const m = metricsWith();
    const topics = { triggersTopic: 't', dlqTopic: 'd' };
    m.countCommit(
      [
        { topic: 't', key: null, value: null },
        { topic: 't', key: null, value: null },
        { topic: 'd', key: null, value: null, headers: { 'x-error-class': 'schema' } },
        { topic: 'd', key: null, value: null, headers: { 'x-error-class': 'invalid-json' } },
        { topic: 'd', key: null, value: null, headers: { 'x-error-class': 'schema' } },
      ],
      topics,
    );
    m.countCommit([], topics);
    const text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_commits_total')).toBe(2);
    expect(sampleValue(text, 'rxingest_triggers_total')).toBe(2);
    expect(sampleValue(text, 'rxingest_dead_letters_total', { class: 'schema' })).toBe(2);
    expect(sampleValue(text, 'rxingest_dead_letters_total', { class: 'invalid-json' })).toBe(1);
    expect(sampleValue(text, 'rxingest_dead_letters_total', { class: 'too-large' })).toBe(0);
  });

  it('puts end-to-end latencies into the histogram in seconds, a future ts as 0, nonsense not at all', async () => {
    const m = metricsWith();
    m.observeLatencies([40, 2_000, -500, Number.NaN]);
    const text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_e2e_latency_seconds_count')).toBe(3);
    expect(sampleValue(text, 'rxingest_e2e_latency_seconds_sum')).toBeCloseTo(2.04);
    expect(sampleValue(text, 'rxingest_e2e_latency_seconds_bucket', { le: '0.05' })).toBe(2);
  });

  it("puts the latency's two parts into their own series, in seconds, a negative part as 0", async () => {
    const m = metricsWith();
    m.observeLatencyParts([60_000, -3], [20, 300, Number.NaN]);
    const text = parsePrometheusText(await m.registry.metrics());
    const part = (p: string, name: string, le?: string) =>
      sampleValue(text, `rxingest_record_latency_seconds_${name}`, le ? { part: p, le } : { part: p });
    expect(part('kafka', 'count')).toBe(2);
    expect(part('kafka', 'sum')).toBeCloseTo(60);
    expect(part('kafka', 'bucket', '0.01')).toBe(1);
    expect(part('worker', 'count')).toBe(2);
    expect(part('worker', 'sum')).toBeCloseTo(0.32);
    // The buckets around the 250 ms target are fine enough to read a p99 from.
    expect(part('worker', 'bucket', '0.25')).toBe(1);
    expect(part('worker', 'bucket', '0.3')).toBe(2);
  });

  it('puts each stage call into the stage duration histogram under its stage', async () => {
    const m = metricsWith();
    const observe = m.stageObserver();
    observe('write-events', 0.04);
    observe('write-events', 0.2);
    observe('redis-lookup', 0.002);
    const text = parsePrometheusText(await m.registry.metrics());
    const stage = (s: string, name: string) =>
      sampleValue(text, `rxingest_stage_duration_seconds_${name}`, { stage: s });
    expect(stage('write-events', 'count')).toBe(2);
    expect(stage('write-events', 'sum')).toBeCloseTo(0.24);
    expect(stage('redis-lookup', 'count')).toBe(1);
    expect(stage('write-profiles', 'count')).toBe(0);
  });

  it('reports the Elasticsearch store into request durations, retries and 409s', async () => {
    const m = metricsWith();
    const o = m.elasticsearchObserver();
    o.request('bulk', 0.02);
    o.retries('item-429', 3);
    o.conflicts('profile-version', 2);
    const text = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(text, 'rxingest_es_request_duration_seconds_count', { op: 'bulk' })).toBe(1);
    expect(sampleValue(text, 'rxingest_retries_total', { target: 'elasticsearch', reason: 'item-429' })).toBe(
      3,
    );
    expect(sampleValue(text, 'rxingest_es_conflicts_total', { kind: 'profile-version' })).toBe(2);
  });

  it('adds prom-client default process and Node metrics under the rxingest_ prefix', async () => {
    const names = (await new WorkerMetrics().registry.getMetricsAsJSON()).map((x) => x.name);
    for (const n of [
      'rxingest_process_cpu_seconds_total',
      'rxingest_process_resident_memory_bytes',
      'rxingest_nodejs_eventloop_lag_seconds',
      'rxingest_nodejs_heap_size_used_bytes',
      'rxingest_nodejs_gc_duration_seconds',
    ]) {
      expect(names).toContain(n);
    }
    expect(names.every((n) => n.startsWith('rxingest_'))).toBe(true);
  });

  it('the Redis fallbacks are retries with target="redis"; failed calls (not the ones the open breaker kept back) are Redis errors', async () => {
    const m = metricsWith();
    const observer = m.redisObserver();
    observer.fallback('lookup', 'timeout');
    observer.fallback('lookup', 'timeout');
    observer.fallback('mark', 'connection');
    observer.fallback('mark', 'breaker-open');
    const text = parsePrometheusText(await m.registry.metrics());
    const retries = (reason: string) =>
      sampleValue(text, 'rxingest_retries_total', { target: 'redis', reason });
    expect([retries('timeout'), retries('connection'), retries('breaker-open')]).toEqual([2, 1, 1]);
    expect(sampleValue(text, 'rxingest_redis_errors_total', { op: 'lookup' })).toBe(2);
    expect(sampleValue(text, 'rxingest_redis_errors_total', { op: 'claim' })).toBe(1);
  });
});
