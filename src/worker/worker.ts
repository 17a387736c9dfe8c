import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import { Subject } from 'rxjs';
import type { Config } from '../config/config.js';
import { type HttpServerHandle, startHttpServer } from '../http/http-server.js';
import { Readiness } from '../http/readiness.js';
import { assertKafkajsProduceRetries } from '../kafkajs-patch/produce-retries.js';
import { assertKafkajsReadCommitted } from '../kafkajs-patch/read-committed.js';
import { timedDocumentStore, timedKnownCopies } from '../metrics/timed-sinks.js';
import { WorkerMetrics } from '../metrics/worker-metrics.js';
import { Assignment } from '../model/topic-partition.js';
import { type Enrich, identityEnrich } from '../operators/enrich-in-order.js';
import { PushbackHolds } from '../pushback/intake/holds.js';
import { partitionShare } from '../pushback/intake/marks.js';
import { PartitionPauses } from '../pushback/intake/partition-pauses.js';
import { v8HeapReader } from '../pushback/memory/heap-guard.js';
import { pushbackReactions } from '../pushback/reactions.js';
import { WorkerPushback } from '../pushback/worker-pushback.js';
import { createRetryPolicy, type RetryPolicy } from '../retry/retry-policy.js';
import { ElasticsearchDocumentStore } from '../sinks/elasticsearch/document-store.js';
import { IndexEpochs } from '../sinks/elasticsearch/index-epochs.js';
import { elasticsearchAnswers } from '../sinks/elasticsearch/liveness.js';
import { RecentProfiles } from '../sinks/elasticsearch/recent-profiles.js';
import { ProgressLedger } from '../sinks/kafka/progress-ledger.js';
import { RedisKnownCopies } from '../sinks/redis/known-copies.js';
import { feedHealth, type HealthFeed } from './health-feed.js';
import { PartitionRegistry } from './partition-registry.js';
import { PartitionRunner, type PartitionRunnerDeps } from './partition-runner.js';
import { checkAndPrepare, closeClients, createClients, type WorkerClients } from './worker-clients.js';

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
 *
 * The composition root, in the order things must exist: the checks of the installed
 * kafkajs, the HTTP server, the clients and their start checks, push-back, the graph's
 * ports, the partitions, the group's events, and then consumption.
 */
export async function startWorker({
  config,
  log,
  enrich = identityEnrich,
}: WorkerOptions): Promise<WorkerHandle> {
  await refuseUnpatchedKafkajs();
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
  const http = await serveOperations(config, { metrics, readiness, log });
  const retry = createRetryPolicy({ baseMs: config.graph.retryBaseMs, maxMs: config.graph.retryMaxMs });
  const starting = await createClients(config, { log, metrics, retry }).catch(async (err: unknown) => {
    await http?.close();
    throw err;
  });

  // What runs beside the clients, stopped before them: filled in as each starts.
  const running: { http?: HttpServerHandle; health?: HealthFeed; pushback?: WorkerPushback } = http
    ? { http }
    : {};
  let clients: WorkerClients;
  try {
    clients = await checkAndPrepare(config, starting, log);
  } catch (err) {
    await closeClients(starting, running);
    throw err;
  }
  const close = () => closeClients(clients, running);
  const assignment = new Assignment();
  const { pauses, holds, pushback } = createPushback(config, clients, { assignment, metrics, log });

  const ports = graphPorts(config, clients, { pushback, metrics, retry, enrich, log });
  running.health = feedHealth({
    readiness,
    es: clients.es,
    consumer: clients.consumer,
    log,
    groupId: config.kafka.groupId,
  });
  clients.poolMonitor.start();

  // What stops the worker on its own (a runner's failure of unknown cause, a consumer crash).
  const failures = new Subject<unknown>();
  const partitions = createPartitions(config, clients, {
    ports,
    pushback,
    pauses,
    assignment,
    retry,
    metrics,
    log,
    onFatal: (err) => failures.next(err),
  });
  const ending = endings({ config, log, metrics, partitions, consumer: clients.consumer, running, close });
  failures.subscribe((err) => ending.fail(err));
  followTheGroup(clients.consumer, { pauses, holds, partitions, failures, log });

  // Before the first fetch: the operators' shed decisions are read first, so that a shed
  // topic is not consumed for a moment at start.
  await pushback.start(() => partitions.unfinished);
  running.pushback = pushback;
  await consume(clients.consumer, partitions);

  log.info(
    {
      topics: config.kafka.topics,
      group: config.kafka.groupId,
      brokers: config.kafka.brokers,
      heapLimitMb: Math.round(v8HeapReader()().limitBytes / (1024 * 1024)),
    },
    'worker started',
  );
  return { metrics, httpUrl: http?.url, stop: ending.stop, stopped: ending.stopped };
}

/** Refuses a kafkajs without the project's patch. */
async function refuseUnpatchedKafkajs(): Promise<void> {
  // Input topics and the progress ledger are read read_committed: refuse a kafkajs that leaks aborted records.
  assertKafkajsReadCommitted();
  // Triggers and dead letters go out in transactions that a leader move must not split or repeat.
  await assertKafkajsProduceRetries();
}

/** Serves /metrics, /healthz and /readyz, unless HTTP_PORT=0. */
async function serveOperations(
  config: Config,
  { metrics, readiness, log }: { metrics: WorkerMetrics; readiness: Readiness; log: Logger },
): Promise<HttpServerHandle | undefined> {
  if (config.http.port <= 0) return undefined;
  const http = await startHttpServer({ ...config.http, metrics: metrics.registry, readiness, log });
  log.info({ url: http.url }, `HTTP on ${http.url}: /metrics, /healthz, /readyz`);
  return http;
}

/**
 * Push-back: the partitions' pauses (one reason each), the holds the push-back events put on
 * them, and the mechanisms (the store's gate: adaptive concurrency and breaker; shedding, lag,
 * hot clients, the heap guard).
 */
function createPushback(
  config: Config,
  clients: WorkerClients,
  o: { assignment: Assignment; metrics: WorkerMetrics; log: Logger },
): { pauses: PartitionPauses; holds: PushbackHolds; pushback: WorkerPushback } {
  const { metrics, log } = o;
  const pauses = new PartitionPauses(
    clients.consumer,
    {
      paused: (topic, partition, reason, on) =>
        metrics.setPartitionPaused({ topic, partition: String(partition) }, reason, on),
    },
    log,
  );
  const holds = new PushbackHolds(pauses, o.assignment);
  const pushback = new WorkerPushback({
    settings: config.control,
    group: config.kafka.groupId,
    topics: config.kafka.topics,
    kafka: clients.kafka,
    admin: clients.admin,
    redis: clients.redis,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    answersAtAll: elasticsearchAnswers(clients.esLiveness),
    hooks: pushbackReactions({ metrics, log: log.child({ component: 'pushback' }), holds }),
  });
  return { pauses, holds, pushback };
}

/** What each partition's graph talks to: the owner marks in Redis, the documents in Elasticsearch, enrich. */
function graphPorts(
  config: Config,
  clients: WorkerClients,
  o: { pushback: WorkerPushback; metrics: WorkerMetrics; retry: RetryPolicy; enrich: Enrich; log: Logger },
): PartitionRunnerDeps['ports'] {
  const { pushback, metrics, log } = o;
  const epochs = new IndexEpochs(clients.es);
  const known = new RedisKnownCopies(
    clients.redis,
    {
      keyPrefix: config.redis.keyPrefix,
      group: config.kafka.groupId,
      ttlMs: config.redis.processedTtlMs,
      eventsIndex: config.elasticsearch.eventsIndex,
    },
    {
      epochs,
      health: clients.redisHealth,
      gate: pushback.redisGate,
      observer: metrics.redisObserver(),
      log: log.child({ component: 'redis' }),
    },
  );
  const documents = new ElasticsearchDocumentStore(
    clients.es,
    {
      profilesIndex: config.elasticsearch.profilesIndex,
      eventsIndex: config.elasticsearch.eventsIndex,
      retry: o.retry,
      observer: metrics.elasticsearchObserver(),
      gate: pushback.gate,
      ...(config.elasticsearch.profileCacheSize > 0
        ? { recentProfiles: { cache: new RecentProfiles(config.elasticsearch.profileCacheSize), epochs } }
        : {}),
    },
    log.child({ component: 'elasticsearch' }),
  );
  return {
    known: timedKnownCopies(known, metrics.stageObserver()),
    documents: timedDocumentStore(documents, metrics.stageObserver()),
    enrich: o.enrich,
  };
}

/** One runner per assigned partition, each with its own committer and graph on the shared ports. */
function createPartitions(
  config: Config,
  clients: WorkerClients,
  o: {
    ports: PartitionRunnerDeps['ports'];
    pushback: WorkerPushback;
    pauses: PartitionPauses;
    assignment: Assignment;
    retry: RetryPolicy;
    metrics: WorkerMetrics;
    log: Logger;
    onFatal: (err: unknown) => void;
  },
): PartitionRegistry {
  const { pushback, pauses, retry, metrics, log } = o;
  const ledger = new ProgressLedger(clients.kafka, clients.admin, config.kafka.progressTopic, log);
  return new PartitionRegistry({
    createRunner: (topic, partition, resumeAt) =>
      new PartitionRunner(topic, partition, resumeAt, {
        config,
        kafka: clients.kafka,
        consumer: clients.consumer,
        admin: clients.admin,
        ledger,
        limits: clients.limits,
        ports: o.ports,
        retry,
        pauses,
        metrics,
        log,
        observeClient: (t, clientId) => pushback.observeClient(t, clientId),
        share: () =>
          partitionShare(
            o.assignment.size,
            config.graph.intakeSharePartitions,
            config.graph.batchMax / config.graph.highWater,
          ),
      }),
    pauses,
    assignment: o.assignment,
    retry,
    metrics,
    log,
    drainTimeoutMs: config.shutdownTimeoutMs,
    fencedBackoffMs: 2 * clients.heartbeatInterval,
    onFatal: o.onFatal,
  });
}

/** Follows the consumer group: assignments, fetches that brought only gaps, crashes. */
function followTheGroup(
  consumer: Consumer,
  o: {
    pauses: PartitionPauses;
    holds: PushbackHolds;
    partitions: PartitionRegistry;
    failures: Subject<unknown>;
    log: Logger;
  },
): void {
  // kafkajs has no revoke callback: GROUP_JOIN carries the new assignment, and it is
  // emitted synchronously before the new generation's first fetch, so new partitions
  // are held back (paused) until their previous owner is fenced.
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    o.pauses.reapply();
    o.partitions.assign(payload.memberAssignment);
    o.holds.applyToAssignment();
  });
  // A fetch that brought only transaction markers or aborted records never reaches
  // eachBatch; its end still moves the partition's position.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.batchSize === 0)
      o.partitions
        .runnerFor(payload.topic, payload.partition)
        ?.gapTo(payload.lastOffset, payload.firstOffset);
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) o.failures.next(payload.error);
    else o.log.warn({ err: String(payload.error) }, 'Kafka consumer crashed; kafkajs restarts it');
  });
}

/** Hands every fetched batch to its partition's runner. */
async function consume(consumer: Consumer, partitions: PartitionRegistry): Promise<void> {
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 8,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      const runner = partitions.runnerFor(batch.topic, batch.partition);
      if (runner === undefined || batch.messages.length === 0) return;
      // Not taken (starting, draining): leave the offset unresolved, kafkajs fetches it again.
      // kafkajs's Batch has the offset it was fetched at, not in its types: a stale batch shows by it.
      const fetchedAt = (batch as { fetchedOffset?: string }).fetchedOffset;
      if (!runner.push(batch.messages, batch.lastOffset(), batch.highWatermark, fetchedAt)) return;
      resolveOffset(batch.lastOffset());
      await heartbeat();
    },
  });
}

/**
 * How the worker ends, once: `stop` drains and leaves the group; `fail` gives every partition
 * up at once, committing nothing more. `stopped` settles after either.
 */
function endings(o: {
  config: Config;
  log: Logger;
  metrics: WorkerMetrics;
  partitions: PartitionRegistry;
  consumer: Consumer;
  running: { readonly health?: HealthFeed };
  close: () => Promise<void>;
}): { stop: () => Promise<void>; fail: (err: unknown) => void; stopped: Promise<void> } {
  const { log, partitions, consumer } = o;
  let stopping: Promise<void> | undefined;
  let settle!: { resolve: () => void; reject: (e: unknown) => void };
  const stopped = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  stopped.catch(() => undefined);

  const fail = (err: unknown) => {
    if (stopping) return;
    log.fatal({ err }, 'worker failed; stopping without committing unfinished work');
    stopping = (async () => {
      await partitions.abandonAll();
      await consumer.stop().catch(() => undefined);
      await o.close();
    })();
    void stopping.then(() => settle.reject(err));
  };

  const stop = () => {
    stopping ??= (async () => {
      // Stop fetching and drain while still in the group: consumer.stop() sends LeaveGroup at
      // once, and the peers would take the partitions (fencing this worker) mid-drain.
      log.info('stopping: draining partitions before leaving the group');
      o.running.health?.leaving();
      await partitions.drainAll(o.config.shutdownTimeoutMs);
      await consumer.stop().catch((err) => log.warn({ err: String(err) }, 'consumer stop failed'));
      await o.close();
      log.info(await o.metrics.snapshot(), 'stopped');
      settle.resolve();
    })();
    return stopping;
  };

  return { stop, fail, stopped };
}
