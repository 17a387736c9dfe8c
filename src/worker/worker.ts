import { logLevel } from 'kafkajs';
import type { Logger } from 'pino';
import { checkElasticsearch, createElasticsearch, resolveSearchEngine } from '../clients/elasticsearch.js';
import { checkKafka, createKafka, heartbeatIntervalFor } from '../clients/kafka.js';
import { createRedis, probeRedis } from '../clients/redis.js';
import { engineLabel } from '../clients/search-engine.js';
import type { Config } from '../config/config.js';
import { type HttpServerHandle, startHttpServer } from '../http/http-server.js';
import { Readiness } from '../http/readiness.js';
import { assertKafkajsProduceRetries } from '../kafkajs-patch/produce-retries.js';
import { assertKafkajsReadCommitted } from '../kafkajs-patch/read-committed.js';
import { EsPoolMonitor, esPoolStats } from '../metrics/es-pool-monitor.js';
import { timedDocumentStore, timedKnownCopies } from '../metrics/timed-sinks.js';
import { WorkerMetrics } from '../metrics/worker-metrics.js';
import { Assignment } from '../model/topic-partition.js';
import { type Enrich, identityEnrich } from '../operators/enrich-in-order.js';
import { PushbackHolds } from '../pushback/intake/holds.js';
import { PartitionPauses } from '../pushback/intake/partition-pauses.js';
import { v8HeapReader } from '../pushback/memory/heap-guard.js';
import { pushbackReactions } from '../pushback/reactions.js';
import { WorkerPushback } from '../pushback/worker-pushback.js';
import { createRetryPolicy } from '../retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../sinks/elasticsearch/document-store.js';
import { IndexEpochs } from '../sinks/elasticsearch/index-epochs.js';
import { elasticsearchAnswers } from '../sinks/elasticsearch/liveness.js';
import { RecentProfiles } from '../sinks/elasticsearch/recent-profiles.js';
import { ProgressLedger } from '../sinks/kafka/progress-ledger.js';
import { TopicLimits } from '../sinks/kafka/topic-limits.js';
import { RedisHealth } from '../sinks/redis/health.js';
import { RedisKnownCopies } from '../sinks/redis/known-copies.js';
import { ensureIndices } from './elasticsearch-setup.js';
import { feedHealth, type HealthFeed } from './health-feed.js';
import { kafkaLogCreator } from './kafka-log.js';
import { ensureTopics } from './kafka-setup.js';
import { PartitionRegistry } from './partition-registry.js';
import { PartitionRunner } from './partition-runner.js';

export interface WorkerOptions {
  readonly config: Config;
  readonly log: Logger;
  /** The per-message async step; identity by default. */
  readonly enrich?: Enrich;
}

export interface WorkerHandle {
  readonly metrics: WorkerMetrics;
  /** Where /metrics, /healthz and /readyz are served; undefined with HTTP_PORT=0. */
  readonly httpUrl: string | undefined;
  /** Drains every partition, commits, leaves the group, disconnects. Safe to call more than once. */
  stop(): Promise<void>;
  /** Settles when the worker has stopped: resolves after stop(), rejects on a fatal error. */
  readonly stopped: Promise<void>;
}

/**
 * The worker: joins the consumer group and runs one graph per assigned partition
 * (PartitionRunner, kept alive by PartitionRegistry). Redis is optional: the worker starts
 * and ingests without it, and uses it as soon as it answers.
 */
export async function startWorker({
  config,
  log,
  enrich = identityEnrich,
}: WorkerOptions): Promise<WorkerHandle> {
  // Input topics and the progress ledger are read read_committed: refuse a kafkajs that leaks aborted records.
  assertKafkajsReadCommitted();
  // Triggers and dead letters go out in transactions that a leader move must not split or repeat.
  await assertKafkajsProduceRetries();
  const metrics = new WorkerMetrics({
    topics: config.kafka.topics,
    esMaxConnections: config.elasticsearch.maxConnections,
  });
  const readiness = new Readiness({
    joined: `not yet joined the consumer group "${config.kafka.groupId}"`,
    elasticsearch: 'starting: Elasticsearch not checked yet',
    kafka: 'starting: no answer from Kafka yet',
  });
  // First, so that an address in use stops the start before any connection is made.
  const http: HttpServerHandle | undefined =
    config.http.port > 0
      ? await startHttpServer({ ...config.http, metrics: metrics.registry, readiness, log })
      : undefined;
  if (http) log.info({ url: http.url }, `HTTP on ${http.url}: /metrics, /healthz, /readyz`);
  const retry = createRetryPolicy({ baseMs: config.graph.retryBaseMs, maxMs: config.graph.retryMaxMs });
  // Which engine and version ES_NODE is decides the dialect of every request and index.
  const engine = await resolveSearchEngine(config.elasticsearch).catch(async (err: unknown) => {
    await http?.close();
    throw err;
  });
  log.info(
    {
      engine: engine.product,
      version: engine.version,
      how: config.elasticsearch.engine === 'auto' ? 'detected' : 'ES_ENGINE',
    },
    `search engine: ${engineLabel(engine)}`,
  );
  const es = createElasticsearch(
    config.elasticsearch,
    {
      requestTimeout: config.elasticsearch.requestTimeoutMs,
      maxRetries: 0, // the document store retries per item, with the retry policy
      agent: { connections: config.elasticsearch.maxConnections },
    },
    engine,
  );
  // The breaker's liveness check, on a connection of its own (see elasticsearchAnswers).
  const esLiveness = createElasticsearch(
    config.elasticsearch,
    { maxRetries: 0, agent: { connections: 1 } },
    engine,
  );
  const poolMonitor = new EsPoolMonitor({
    readStats: () => esPoolStats(es),
    maxConnections: config.elasticsearch.maxConnections,
    publish: (pool) => metrics.setEsPool(pool),
    log,
  });
  const redis = createRedis(config.redis, {
    lazyConnect: true,
    // Fail fast instead of queueing while Redis is away: it only saves work.
    enableOfflineQueue: false,
    commandTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: (times) => retry.delay(Math.min(times, 6)) + 100,
  });
  const kafka = createKafka(config.kafka, {
    clientId: config.kafka.clientId,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(log),
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
  });
  const admin = kafka.admin();
  // Known before the first dead letter, so that no record too large for its topic enters a transaction.
  const limits = new TopicLimits(admin, log.child({ component: 'kafka' }));
  const heartbeatInterval = heartbeatIntervalFor(config.kafka.sessionTimeoutMs);
  const consumer = kafka.consumer({
    groupId: config.kafka.groupId,
    sessionTimeout: config.kafka.sessionTimeoutMs,
    heartbeatInterval,
    // A paused partition's resume waits for the fetch loop's sleep: keep it short.
    maxWaitTimeInMs: 250,
    maxBytesPerPartition: config.kafka.maxBytesPerPartition,
    readUncommitted: false,
  });
  const redisHealth = new RedisHealth(
    redis,
    { probeEveryMs: 1_000, onChange: (up) => metrics.setRedisUp(up) },
    log.child({ component: 'redis' }),
  );

  const pauses = new PartitionPauses(
    consumer,
    {
      paused: (topic, partition, reason, on) =>
        metrics.setPartitionPaused({ topic, partition: String(partition) }, reason, on),
    },
    log,
  );
  // Push-back: the store's gate (adaptive concurrency, breaker), shedding, lag, hot clients.
  const assignment = new Assignment();
  const holds = new PushbackHolds(pauses, assignment);
  const pushbackLog = log.child({ component: 'pushback' });
  const pushback = new WorkerPushback({
    settings: config.control,
    group: config.kafka.groupId,
    topics: config.kafka.topics,
    kafka,
    admin,
    redis,
    // Read only once started, after the registry below exists.
    inFlight: (): number => registry.unfinished,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    answersAtAll: elasticsearchAnswers(esLiveness),
    hooks: pushbackReactions({ metrics, log: pushbackLog, holds }),
  });

  let health: HealthFeed | undefined;
  let pushbackStarted = false;
  const closeClients = async () => {
    redisHealth.stop();
    health?.stop();
    poolMonitor.stop();
    if (pushbackStarted) await pushback.stop();
    await Promise.allSettled([consumer.disconnect(), admin.disconnect(), es.close(), esLiveness.close()]);
    redis.disconnect();
    await http?.close();
  };

  try {
    // Redis may be down (the worker starts without it and uses it once it answers), but a
    // wrong password or an unknown CA is a setting to fix: that stops the start, in one line.
    const probe = await probeRedis(config.redis);
    if (!probe.up) log.warn({ reason: probe.reason }, 'Redis unavailable at start; ingesting without it');
    redisHealth.start();
    await checkElasticsearch(es, config.elasticsearch);
    await ensureIndices(es, config.elasticsearch, log, engine);
    await checkKafka(config.kafka);
    await admin.connect();
    await ensureTopics(admin, config.kafka, log);
    await limits.ensure([config.kafka.dlqTopic, config.kafka.triggersTopic, config.kafka.progressTopic]);
    await consumer.connect();
    await consumer.subscribe({ topics: config.kafka.topics, fromBeginning: config.kafka.fromBeginning });
  } catch (err) {
    await closeClients();
    throw err;
  }

  const epochs = new IndexEpochs(es);
  const ports = {
    known: timedKnownCopies(
      new RedisKnownCopies(
        redis,
        {
          keyPrefix: config.redis.keyPrefix,
          group: config.kafka.groupId,
          ttlMs: config.redis.processedTtlMs,
          eventsIndex: config.elasticsearch.eventsIndex,
        },
        {
          epochs,
          health: redisHealth,
          gate: pushback.redisGate,
          observer: metrics.redisObserver(),
          log: log.child({ component: 'redis' }),
        },
      ),
      metrics.stageObserver(),
    ),
    documents: timedDocumentStore(
      new ElasticsearchDocumentStore(
        es,
        {
          profilesIndex: config.elasticsearch.profilesIndex,
          eventsIndex: config.elasticsearch.eventsIndex,
          retry,
          observer: metrics.elasticsearchObserver(),
          gate: pushback.gate,
          ...(config.elasticsearch.profileCacheSize > 0
            ? { recentProfiles: { cache: new RecentProfiles(config.elasticsearch.profileCacheSize), epochs } }
            : {}),
        },
        log.child({ component: 'elasticsearch' }),
      ),
      metrics.stageObserver(),
    ),
    enrich,
  };

  health = feedHealth({ readiness, es, consumer, log, groupId: config.kafka.groupId });
  poolMonitor.start();

  let stopping: Promise<void> | undefined;
  let settle!: { resolve: () => void; reject: (e: unknown) => void };
  const stopped = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  stopped.catch(() => undefined);

  const ledger = new ProgressLedger(kafka, admin, config.kafka.progressTopic, log);
  const fail = (err: unknown) => {
    if (stopping) return;
    log.fatal({ err }, 'worker failed; stopping without committing unfinished work');
    stopping = (async () => {
      await registry.abandonAll();
      await consumer.stop().catch(() => undefined);
      await closeClients();
    })();
    void stopping.then(() => settle.reject(err));
  };
  const registry = new PartitionRegistry({
    createRunner: (topic, partition, resumeAt) =>
      new PartitionRunner(topic, partition, resumeAt, {
        config,
        kafka,
        consumer,
        admin,
        ledger,
        limits,
        ports,
        retry,
        pauses,
        metrics,
        log,
        observeClient: (t, clientId) => pushback.observeClient(t, clientId),
      }),
    pauses,
    assignment,
    retry,
    metrics,
    log,
    drainTimeoutMs: config.shutdownTimeoutMs,
    fencedBackoffMs: 2 * heartbeatInterval,
    onFatal: fail,
  });

  // kafkajs has no revoke callback: GROUP_JOIN carries the new assignment, and it is
  // emitted synchronously before the new generation's first fetch, so new partitions
  // are held back (paused) until their previous owner is fenced.
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    pauses.reapply();
    registry.assign(payload.memberAssignment);
    holds.applyToAssignment();
  });
  // A fetch that brought only transaction markers or aborted records never reaches
  // eachBatch; its end still moves the partition's position.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.batchSize === 0)
      registry.runnerFor(payload.topic, payload.partition)?.gapTo(payload.lastOffset, payload.firstOffset);
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) fail(payload.error);
    else log.warn({ err: String(payload.error) }, 'Kafka consumer crashed; kafkajs restarts it');
  });

  // Before the first fetch: the operators' shed decisions are read first, so that a shed
  // topic is not consumed for a moment at start.
  await pushback.start();
  pushbackStarted = true;

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 8,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      const runner = registry.runnerFor(batch.topic, batch.partition);
      if (runner === undefined || batch.messages.length === 0) return;
      // Not taken (starting, draining): leave the offset unresolved, kafkajs fetches it again.
      // kafkajs's Batch has the offset it was fetched at, not in its types: a stale batch shows by it.
      const fetchedAt = (batch as { fetchedOffset?: string }).fetchedOffset;
      if (!runner.push(batch.messages, batch.lastOffset(), batch.highWatermark, fetchedAt)) return;
      resolveOffset(batch.lastOffset());
      await heartbeat();
    },
  });

  log.info(
    {
      topics: config.kafka.topics,
      group: config.kafka.groupId,
      brokers: config.kafka.brokers,
      heapLimitMb: Math.round(v8HeapReader()().limitBytes / (1024 * 1024)),
    },
    'worker started',
  );

  const stop = () => {
    stopping ??= (async () => {
      // Stop fetching and drain while still in the group: consumer.stop() sends LeaveGroup at
      // once, and the peers would take the partitions (fencing this worker) mid-drain.
      log.info('stopping: draining partitions before leaving the group');
      health?.leaving();
      await registry.drainAll(config.shutdownTimeoutMs);
      await consumer.stop().catch((err) => log.warn({ err: String(err) }, 'consumer stop failed'));
      await closeClients();
      log.info(await metrics.snapshot(), 'stopped');
      settle.resolve();
    })();
    return stopping;
  };

  return { metrics, httpUrl: http?.url, stop, stopped };
}
