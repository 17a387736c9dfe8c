import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { OutRecord } from '../model/out-record.js';
import type { OutcomeKind } from '../model/outcome.js';
import type { ElasticsearchStoreObserver } from '../sinks/elasticsearch/observer.js';
import type { RedisObserver } from '../sinks/redis/known-copies.js';
import { BatchedHistogram } from './batched-histogram.js';
import { eventLoopBusyCounter } from './event-loop-busy.js';
import {
  BREAKER_STATES,
  type BreakerState,
  DEAD_LETTER_CLASSES,
  E2E_BUCKETS,
  KAFKA_PART,
  type MetricsSnapshot,
  OUTCOMES,
  type PartitionLabels,
  REQUEST_BUCKETS,
  type RetryTarget,
  SINK_STAGES,
  type StageObserver,
  UNLABELLED,
  WORKER_PART,
} from './metric-labels.js';

export interface WorkerMetricsOptions {
  /** Input topics: `rxingest_topic_shed` starts at 0 for each. */
  readonly topics?: readonly string[];
  /** The Elasticsearch connection pool's size: the concurrency cap until a limiter sets its own. */
  readonly esMaxConnections?: number;
  /** Breaker targets that start out closed. */
  readonly breakerTargets?: readonly string[];
  /** prom-client's process and Node metrics (event-loop lag, heap, GC), prefixed `rxingest_`. */
  readonly defaultMetrics?: boolean;
}

/**
 * The worker's metrics, in a registry of its own (no global default registry),
 * served on `/metrics` and read by the demo's progress line. Names and labels
 * are the contract's ("Operating it"); labels stay bounded: topic, partition,
 * outcome, class, op, target, reason — never a client id or a message id.
 *
 * Every metric has one writer: the methods below (the fields are public for reading).
 * Hot paths count plain numbers and hand them over per batch or commit, because a
 * labelled prom-client call costs more than a record's own work in the graph.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly r = [this.registry];

  readonly recordsIn = new Counter({
    name: 'rxingest_records_in_total',
    help: 'Records taken from Kafka into a partition graph',
    registers: this.r,
  });
  readonly recordsDone = new Counter({
    name: 'rxingest_records_done_total',
    help: 'Records finished, by outcome (indexed, duplicate, stale, dead-letter; tombstones: ignored, deleted)',
    labelNames: ['outcome'] as const,
    registers: this.r,
  });
  readonly deadLetters = new Counter({
    name: 'rxingest_dead_letters_total',
    help: 'Dead letters published (committed with their offsets), by error class',
    labelNames: ['class'] as const,
    registers: this.r,
  });
  readonly triggers = new Counter({
    name: 'rxingest_triggers_total',
    help: 'Trigger records published (committed with their offsets)',
    registers: this.r,
  });
  readonly commits = new Counter({
    name: 'rxingest_commits_total',
    help: 'Offset commits (Kafka transactions)',
    registers: this.r,
  });
  readonly commitDuration = new Histogram({
    name: 'rxingest_commit_duration_seconds',
    help: 'One offset commit: the Kafka transaction with its triggers and dead letters, retries included',
    buckets: REQUEST_BUCKETS,
    registers: this.r,
  });
  readonly inFlight = new Gauge({
    name: 'rxingest_in_flight',
    help: 'Records taken into a partition graph and not yet durably committed',
    labelNames: ['topic', 'partition'] as const,
    registers: this.r,
  });
  readonly inFlightBytes = new Gauge({
    name: 'rxingest_in_flight_bytes',
    help: 'Key and value bytes taken into a partition graph and not yet durably committed (HIGH_WATER_BYTES pauses it)',
    labelNames: ['topic', 'partition'] as const,
    registers: this.r,
  });
  /** Written by setConsumerLag only: the broker's sample, never a partition's own fetch. */
  readonly lag = new Gauge({
    name: 'rxingest_consumer_lag',
    help: "Records between the group's committed offset and the partition end, as the broker reports them every LAG_INTERVAL_MS (right while a partition is paused); partitions this worker owns",
    labelNames: ['topic', 'partition'] as const,
    registers: this.r,
  });
  readonly paused = new Gauge({
    name: 'rxingest_partition_paused',
    help: '1 while a partition is paused for this reason (starting, backpressure, …)',
    labelNames: ['topic', 'partition', 'reason'] as const,
    registers: this.r,
  });
  readonly stalled = new Gauge({
    name: 'rxingest_partition_stalled',
    help: '1 while a partition has lag or unfinished work and made no commit for STALL_TIMEOUT_MS',
    labelNames: ['topic', 'partition'] as const,
    registers: this.r,
  });
  readonly restarts = new Counter({
    name: 'rxingest_partition_restarts_total',
    help: 'Partition graphs started again while still assigned, by reason (fenced, commit-failed, transient)',
    labelNames: ['reason'] as const,
    registers: this.r,
  });
  readonly partitionsFenced = new Counter({
    name: 'rxingest_partitions_fenced_total',
    help: 'Partitions this worker lost because a newer owner fenced its transactional producer',
    registers: this.r,
  });
  /** Fed per batch (see BatchedHistogram): every indexed record observes it. */
  readonly e2eLatency = new BatchedHistogram(
    'rxingest_e2e_latency_seconds',
    "From the message's own ts to the record being indexed (clock skew included; negative counts as 0)",
    E2E_BUCKETS,
    [{}],
    this.registry,
  );
  /** Its label sets, in the order KAFKA_PART and WORKER_PART name them. */
  readonly recordLatency = new BatchedHistogram(
    'rxingest_record_latency_seconds',
    "The e2e latency in two parts: kafka, from the message's ts until the fetch hands it to the worker (the producer's send, Kafka's append, the fetch); worker, from then until indexed",
    E2E_BUCKETS,
    [{ part: 'kafka' }, { part: 'worker' }],
    this.registry,
  );
  readonly stageDuration = new Histogram({
    name: 'rxingest_stage_duration_seconds',
    help: "A partition graph's calls on Redis and Elasticsearch, by stage (redis-lookup, write-events, write-profiles, delete-profiles, redis-marks): waits for a request slot and retries included",
    labelNames: ['stage'] as const,
    buckets: REQUEST_BUCKETS,
    registers: this.r,
  });
  readonly esRequestDuration = new Histogram({
    name: 'rxingest_es_request_duration_seconds',
    help: 'Elasticsearch requests by operation (bulk, mget), failed ones included',
    labelNames: ['op'] as const,
    buckets: REQUEST_BUCKETS,
    registers: this.r,
  });
  readonly esConflicts = new Counter({
    name: 'rxingest_es_conflicts_total',
    help: 'Elasticsearch 409 answers: event-exists (a known event id) or profile-version (a lost race, re-read and retried)',
    labelNames: ['kind'] as const,
    registers: this.r,
  });
  readonly esConcurrencyLimit = new Gauge({
    name: 'rxingest_es_concurrency_limit',
    help: 'Concurrent Elasticsearch requests allowed (the connection pool size until a limiter sets it)',
    registers: this.r,
  });
  readonly esPoolUtilization = new Gauge({
    name: 'rxingest_es_pool_utilization',
    help: 'Share of the Elasticsearch connection pool busy with a request (0..1)',
    registers: this.r,
  });
  readonly esPoolQueued = new Gauge({
    name: 'rxingest_es_pool_queued',
    help: 'Elasticsearch requests waiting for a connection (their wait counts toward the request timeout)',
    registers: this.r,
  });
  readonly esPoolConnections = new Gauge({
    name: 'rxingest_es_pool_connections',
    help: 'Open connections to Elasticsearch',
    registers: this.r,
  });
  readonly retries = new Counter({
    name: 'rxingest_retries_total',
    help: 'Retries after a transient failure, by target (elasticsearch: requests and documents sent again; redis: calls that failed or were skipped, the work left to Elasticsearch; kafka: partition restarts, start-up reads, commits sent again) and reason',
    labelNames: ['target', 'reason'] as const,
    registers: this.r,
  });
  readonly breakerState = new Gauge({
    name: 'rxingest_breaker_state',
    help: 'Circuit breaker per target: 0 closed, 1 half-open, 2 open',
    labelNames: ['target'] as const,
    registers: this.r,
  });
  readonly topicShed = new Gauge({
    name: 'rxingest_topic_shed',
    help: '1 while a topic is being shed (its intake held back in favour of others)',
    labelNames: ['topic'] as const,
    registers: this.r,
  });
  readonly redisUp = new Gauge({
    name: 'rxingest_redis_up',
    help: '1 while Redis answers, 0 while it is down, frozen or unreachable (ingestion goes on without it)',
    registers: this.r,
  });
  readonly redisErrors = new Counter({
    name: 'rxingest_redis_errors_total',
    help: 'Redis errors by operation (connection, lookup, claim)',
    labelNames: ['op'] as const,
    registers: this.r,
  });
  readonly hotClients = new Gauge({
    name: 'rxingest_hot_clients',
    help: 'Clients currently treated as hot (their share of traffic above the skew threshold)',
    registers: this.r,
  });

  constructor(options: WorkerMetricsOptions = {}) {
    for (const outcome of OUTCOMES) this.recordsDone.inc({ outcome }, 0);
    for (const c of DEAD_LETTER_CLASSES) this.deadLetters.inc({ class: c }, 0);
    for (const op of ['bulk', 'mget'] as const) this.esRequestDuration.zero({ op });
    for (const stage of SINK_STAGES) this.stageDuration.zero({ stage });
    for (const kind of ['event-exists', 'profile-version'] as const) this.esConflicts.inc({ kind }, 0);
    for (const target of options.breakerTargets ?? ['elasticsearch', 'redis'])
      this.setBreakerState(target, 'closed');
    for (const topic of options.topics ?? []) this.setTopicShed(topic, false);
    this.esConcurrencyLimit.set(options.esMaxConnections ?? 0);
    this.redisUp.set(0);
    this.hotClients.set(0);
    if (options.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, prefix: 'rxingest_' });
      eventLoopBusyCounter(this.registry);
    }
  }

  /** End-to-end latencies in ms (indexed time minus the message's `ts`), handed over per batch. */
  observeLatencies(ms: readonly number[]): void {
    this.e2eLatency.observeMs(UNLABELLED, ms);
  }

  /** The same latencies' two parts in ms: `ts` → fetched (Kafka's), fetched → indexed (the worker's). */
  observeLatencyParts(kafkaMs: readonly number[], workerMs: readonly number[]): void {
    this.recordLatency.observeMs(KAFKA_PART, kafkaMs);
    this.recordLatency.observeMs(WORKER_PART, workerMs);
  }

  /** How long each call of a stage on a sink took, into `rxingest_stage_duration_seconds`. */
  stageObserver(): StageObserver {
    return (stage, seconds) => this.stageDuration.observe({ stage }, seconds);
  }

  /** One durable commit: counts it, its triggers, and its dead letters by class. */
  countCommit(
    payloads: readonly OutRecord[],
    topics: { readonly triggersTopic: string; readonly dlqTopic: string },
  ): void {
    this.commits.inc();
    let triggers = 0;
    for (const r of payloads) {
      if (r.topic === topics.triggersTopic) triggers++;
      else if (r.topic === topics.dlqTopic)
        this.deadLetters.inc({ class: r.headers?.['x-error-class'] ?? 'unknown' });
    }
    if (triggers > 0) this.triggers.inc(triggers);
  }

  countRetries(target: RetryTarget, reason: string, n = 1): void {
    if (n > 0) this.retries.inc({ target, reason }, n);
  }

  countRedisErrors(op: 'connection' | 'lookup' | 'claim', n = 1): void {
    if (n > 0) this.redisErrors.inc({ op }, n);
  }

  observeCommitDuration(seconds: number): void {
    this.commitDuration.observe(seconds);
  }

  /** A partition's records and bytes taken in and not yet durably committed. */
  setInFlight(partition: PartitionLabels, records: number, bytes: number): void {
    this.inFlight.set(partition, records);
    this.inFlightBytes.set(partition, bytes);
  }

  /** The broker's lag sample for a partition this worker owns: the one source of `rxingest_consumer_lag`. */
  setConsumerLag(partition: PartitionLabels, lag: number): void {
    this.lag.set(partition, lag);
  }

  setPartitionPaused(partition: PartitionLabels, reason: string, paused: boolean): void {
    this.paused.set({ ...partition, reason }, paused ? 1 : 0);
  }

  setPartitionStalled(partition: PartitionLabels, stalled: boolean): void {
    this.stalled.set(partition, stalled ? 1 : 0);
  }

  /** A partition left this worker: its in-flight, lag and stall series go with it. */
  forgetPartition(partition: PartitionLabels): void {
    this.inFlight.remove(partition);
    this.inFlightBytes.remove(partition);
    this.lag.remove(partition);
    this.stalled.remove(partition);
  }

  countPartitionRestart(reason: string): void {
    this.restarts.inc({ reason });
  }

  countPartitionFenced(): void {
    this.partitionsFenced.inc();
  }

  setEsConcurrencyLimit(limit: number): void {
    this.esConcurrencyLimit.set(limit);
  }

  setBreakerState(target: string, state: BreakerState): void {
    this.breakerState.set({ target }, BREAKER_STATES[state]);
  }

  setTopicShed(topic: string, shed: boolean): void {
    this.topicShed.set({ topic }, shed ? 1 : 0);
  }

  setRedisUp(up: boolean): void {
    this.redisUp.set(up ? 1 : 0);
  }

  setHotClients(count: number): void {
    this.hotClients.set(count);
  }

  setEsPool(pool: { utilization: number; queued: number; connections: number }): void {
    this.esPoolUtilization.set(pool.utilization);
    this.esPoolQueued.set(pool.queued);
    this.esPoolConnections.set(pool.connections);
  }

  /** What the Elasticsearch document store reports, into these metrics. */
  elasticsearchObserver(): ElasticsearchStoreObserver {
    return {
      request: (op, seconds) => this.esRequestDuration.observe({ op }, seconds),
      retries: (reason, count) => this.countRetries('elasticsearch', reason, count),
      conflicts: (kind, count) => this.esConflicts.inc({ kind }, count),
    };
  }

  /**
   * What the owner marks report about Redis: every fallback is a `rxingest_retries_total`
   * with target="redis" (the call's work goes round through Elasticsearch instead); the
   * failed calls (not those the open breaker kept back) also count as Redis errors.
   */
  redisObserver(): RedisObserver {
    return {
      fallback: (op, reason) => {
        this.countRetries('redis', reason);
        if (reason !== 'breaker-open') this.countRedisErrors(op === 'lookup' ? 'lookup' : 'claim');
      },
    };
  }

  /** Plain numbers for a progress line or a summary. */
  async snapshot(): Promise<MetricsSnapshot> {
    const done = await this.recordsDone.get();
    const by = (k: OutcomeKind) => done.values.find((v) => v.labels.outcome === k)?.value ?? 0;
    const sum = async (g: Gauge) => (await g.get()).values.reduce((a, v) => a + v.value, 0);
    return {
      recordsIn: (await this.recordsIn.get()).values[0]?.value ?? 0,
      indexed: by('indexed'),
      duplicates: by('duplicate'),
      stale: by('stale'),
      deadLetters: by('dead-letter'),
      ignored: by('ignored'),
      deleted: by('deleted'),
      triggers: (await this.triggers.get()).values[0]?.value ?? 0,
      commits: (await this.commits.get()).values[0]?.value ?? 0,
      inFlight: await sum(this.inFlight),
      lag: await sum(this.lag),
    };
  }
}
