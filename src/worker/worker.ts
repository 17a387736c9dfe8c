import { createServer, type Server } from 'node:http';
import { logLevel } from 'kafkajs';
import type { Logger } from 'pino';
import { checkElasticsearch, createElasticsearch } from '../clients/elasticsearch.js';
import { checkKafka, createKafka } from '../clients/kafka.js';
import { createRedis, describeRedisFailure } from '../clients/redis.js';
import type { Config } from '../config/config.js';
import { type Enrich, identityEnrich } from '../operators/enrich-in-order.js';
import { ElasticsearchDocumentStore } from '../sinks/elasticsearch-document-store.js';
import { RedisProcessedStore } from '../sinks/redis-processed-store.js';
import { ensureIndices } from './elasticsearch-setup.js';
import { kafkaLogCreator } from './kafka-log.js';
import { ensureTopics } from './kafka-setup.js';
import { WorkerMetrics } from './metrics.js';
import { PartitionRunner } from './partition-runner.js';

export interface WorkerOptions {
  readonly config: Config;
  readonly log: Logger;
  /** The per-message async step; identity by default. */
  readonly enrich?: Enrich;
}

export interface WorkerHandle {
  readonly metrics: WorkerMetrics;
  /** Drains every partition, commits, disconnects. Safe to call more than once. */
  stop(): Promise<void>;
  /** Settles when the worker has stopped: resolves after stop(), rejects on a fatal error. */
  readonly stopped: Promise<void>;
}

/**
 * The worker: joins the consumer group and runs one graph per assigned
 * partition (PartitionRunner), built when the partition is assigned and
 * drained when it is revoked or the worker stops.
 */
export async function startWorker({
  config,
  log,
  enrich = identityEnrich,
}: WorkerOptions): Promise<WorkerHandle> {
  const metrics = new WorkerMetrics();
  const es = createElasticsearch(config.elasticsearch, {
    requestTimeout: config.elasticsearch.requestTimeoutMs,
    maxRetries: 0, // the document store retries per item, with backoff
  });
  const redis = createRedis(config.redis, {
    enableOfflineQueue: false,
    commandTimeout: 2_000,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  const kafka = createKafka(config.kafka, {
    clientId: config.kafka.clientId,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(log),
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
  });
  const admin = kafka.admin();
  const consumer = kafka.consumer({
    groupId: config.kafka.groupId,
    sessionTimeout: config.kafka.sessionTimeoutMs,
    heartbeatInterval: Math.min(3_000, Math.floor(config.kafka.sessionTimeoutMs / 3)),
    // A paused partition's resume waits for the fetch loop's sleep: keep it short.
    maxWaitTimeInMs: 250,
    maxBytesPerPartition: config.kafka.maxBytesPerPartition,
    readUncommitted: false,
  });

  let server: Server | undefined;
  const runners = new Map<string, { runner: PartitionRunner; starting: Promise<void> }>();
  let stopping: Promise<void> | undefined;
  let settle!: { resolve: () => void; reject: (e: unknown) => void };
  const stopped = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  stopped.catch(() => undefined);

  const closeClients = async () => {
    await Promise.allSettled([consumer.disconnect(), admin.disconnect(), es.close()]);
    redis.disconnect();
    server?.close();
  };

  try {
    // The socket's error (wrong password, TLS) comes as an 'error' event; connect() then
    // rejects with a bare "Connection is closed.": name the first one.
    let redisError: unknown;
    const onRedisError = (err: unknown) => {
      redisError ??= err;
    };
    redis.on('error', onRedisError);
    await redis
      .connect()
      .catch((err) => {
        throw new Error(describeRedisFailure(config.redis, redisError ?? err));
      })
      .finally(() => redis.off('error', onRedisError));
    await checkElasticsearch(es, config.elasticsearch);
    await ensureIndices(es, config.elasticsearch, log);
    await checkKafka(config.kafka);
    await admin.connect();
    await ensureTopics(admin, config.kafka, log);
    await consumer.connect();
    await consumer.subscribe({ topics: config.kafka.topics, fromBeginning: config.kafka.fromBeginning });
  } catch (err) {
    await closeClients();
    throw err;
  }

  const ports = {
    processed: new RedisProcessedStore(
      redis,
      { keyPrefix: config.redis.keyPrefix, ttlMs: config.redis.processedTtlMs },
      log,
    ),
    documents: new ElasticsearchDocumentStore(
      es,
      {
        profilesIndex: config.elasticsearch.profilesIndex,
        eventsIndex: config.elasticsearch.eventsIndex,
        retryBaseMs: config.graph.retryBaseMs,
        retryMaxMs: config.graph.retryMaxMs,
      },
      log,
    ),
    enrich,
  };

  const fail = (err: unknown) => {
    if (stopping) return;
    log.fatal({ err }, 'worker failed; stopping without committing unfinished work');
    stopping = (async () => {
      await consumer.stop().catch(() => undefined);
      await Promise.allSettled([...runners.values()].map(({ runner }) => runner.drain(0)));
      await closeClients();
    })();
    void stopping.then(() => settle.reject(err));
  };

  const key = (topic: string, partition: number) => `${topic}[${partition}]`;

  // kafkajs has no revoke callback: GROUP_JOIN carries the new assignment, and it is
  // emitted synchronously before the new generation's first fetch, so new partitions
  // can be held back here until their previous owner is fenced.
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    if (stopping) return;
    const assigned = new Set<string>();
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const p of partitions) assigned.add(key(topic, p));
    }
    for (const [k, entry] of runners) {
      if (assigned.has(k)) continue;
      runners.delete(k);
      log.info({ partition: k }, 'partition revoked; draining');
      void entry.starting.then(() => entry.runner.drain(config.shutdownTimeoutMs));
    }
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const p of partitions) {
        if (runners.has(key(topic, p))) continue;
        const runner = new PartitionRunner(topic, p, {
          config,
          kafka,
          consumer,
          admin,
          ports,
          metrics,
          log,
          onFatal: fail,
        });
        runner.holdIntake();
        const starting = runner.start().catch((err) => fail(err));
        runners.set(key(topic, p), { runner, starting });
      }
    }
  });

  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) fail(payload.error);
    else log.warn({ err: payload.error }, 'Kafka consumer crashed; kafkajs restarts it');
  });

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 8,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      const entry = runners.get(key(batch.topic, batch.partition));
      if (batch.messages.length === 0 || entry === undefined) return;
      // Not taken (still starting): leave the offset unresolved, kafkajs fetches it again.
      if (!entry.runner.push(batch.messages, batch.highWatermark)) return;
      resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
      await heartbeat();
    },
  });

  if (config.metricsPort > 0) {
    server = createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    }).listen(config.metricsPort, '127.0.0.1');
  }

  log.info(
    { topics: config.kafka.topics, group: config.kafka.groupId, brokers: config.kafka.brokers },
    'worker started',
  );

  const stop = () => {
    stopping ??= (async () => {
      log.info('stopping: draining partitions');
      await consumer.stop().catch((err) => log.warn({ err }, 'consumer stop failed'));
      await Promise.allSettled(
        [...runners.values()].map(async ({ runner, starting }) => {
          await starting;
          await runner.drain(config.shutdownTimeoutMs);
        }),
      );
      await closeClients();
      log.info(await metrics.snapshot(), 'stopped');
      settle.resolve();
    })();
    return stopping;
  };

  return { metrics, stop, stopped };
}
