import type { Client } from '@elastic/elasticsearch';
import type { Redis } from 'ioredis';
import { type Admin, type Consumer, type Kafka, logLevel } from 'kafkajs';
import type { Logger } from 'pino';
import { checkElasticsearch, createElasticsearch, resolveSearchEngine } from '../clients/elasticsearch.js';
import { checkKafka, createKafka, heartbeatIntervalFor } from '../clients/kafka.js';
import { createRedis, probeRedis } from '../clients/redis.js';
import { engineLabel, type SearchEngine } from '../clients/search-engine.js';
import type { Config } from '../config/config.js';
import { EsPoolMonitor, esPoolStats } from '../metrics/es-pool-monitor.js';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import { fetchBytesPerPartition } from '../pushback/intake/marks.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import { TopicLimits } from '../sinks/kafka/topic-limits.js';
import { RedisHealth } from '../sinks/redis/health.js';
import { ensureIndices } from './elasticsearch-setup.js';
import { kafkaLogCreator } from './kafka-log.js';
import { ensureTopics } from './kafka-setup.js';

/** The worker's connections to its three servers, and what watches them. */
export interface WorkerClients extends StartingClients {
  /** Made once the input topics are known (its fetch size follows their partitions). */
  readonly consumer: Consumer;
}

/** The clients before the start checks: all but the consumer. */
export interface StartingClients {
  /** Which engine and version ES_NODE is: it decides the dialect of every request and index. */
  readonly engine: SearchEngine;
  readonly es: Client;
  /** The breaker's liveness check, on a connection of its own (see elasticsearchAnswers). */
  readonly esLiveness: Client;
  readonly poolMonitor: EsPoolMonitor;
  readonly redis: Redis;
  readonly redisHealth: RedisHealth;
  readonly kafka: Kafka;
  readonly admin: Admin;
  /** The output topics' max.message.bytes. */
  readonly limits: TopicLimits;
  readonly heartbeatInterval: number;
}

/** Creates the clients but the consumer; nothing connects yet but the search engine's detection. */
export async function createClients(
  config: Config,
  { log, metrics, retry }: { log: Logger; metrics: WorkerMetrics; retry: RetryPolicy },
): Promise<StartingClients> {
  const engine = await resolveSearchEngine(config.elasticsearch);
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
  const redisHealth = new RedisHealth(
    redis,
    { probeEveryMs: 1_000, onChange: (up) => metrics.setRedisUp(up) },
    log.child({ component: 'redis' }),
  );
  return {
    engine,
    es,
    esLiveness,
    poolMonitor,
    redis,
    redisHealth,
    kafka,
    admin,
    limits,
    heartbeatInterval,
  };
}

/**
 * The ingestion consumer. Each partition's fetch is shared out like its marks (fetchBytesPerPartition):
 * a partition takes a whole fetch in before its marks can pause it, so with many partitions the
 * fetches, not the marks, would set the records in flight. kafkajs fixes the size when the
 * consumer is made, before any assignment: it follows the input topics' partitions, which a
 * worker of several in a group shares (its fetches are then smaller than its own count needs).
 */
function createConsumer(config: Config, c: StartingClients, inputPartitions: number, log: Logger): Consumer {
  const maxBytesPerPartition = fetchBytesPerPartition(
    config.kafka.maxBytesPerPartition,
    inputPartitions,
    config.graph.intakeSharePartitions,
  );
  if (maxBytesPerPartition !== config.kafka.maxBytesPerPartition)
    log.info(
      { inputPartitions, maxBytesPerPartition, setting: config.kafka.maxBytesPerPartition },
      "fetches per partition shared out over the input topics' partitions",
    );
  return c.kafka.consumer({
    groupId: config.kafka.groupId,
    sessionTimeout: config.kafka.sessionTimeoutMs,
    heartbeatInterval: c.heartbeatInterval,
    // A paused partition's resume waits for the fetch loop's sleep: keep it short.
    maxWaitTimeInMs: 250,
    maxBytesPerPartition,
    readUncommitted: false,
  });
}

/**
 * The start checks, and what must exist before the first record: each server answers with the
 * rights the worker needs, the indices and topics exist, the consumer has joined its topics.
 */
export async function checkAndPrepare(
  config: Config,
  c: StartingClients,
  log: Logger,
): Promise<WorkerClients> {
  // Redis may be down (the worker starts without it and uses it once it answers), but a
  // wrong password or an unknown CA is a setting to fix: that stops the start, in one line.
  const probe = await probeRedis(config.redis);
  if (!probe.up) log.warn({ reason: probe.reason }, 'Redis unavailable at start; ingesting without it');
  c.redisHealth.start();
  await checkElasticsearch(c.es, config.elasticsearch);
  await ensureIndices(c.es, config.elasticsearch, log, c.engine);
  await checkKafka(config.kafka);
  await c.admin.connect();
  const { inputPartitions } = await ensureTopics(c.admin, config.kafka, log);
  await c.limits.ensure([config.kafka.dlqTopic, config.kafka.triggersTopic, config.kafka.progressTopic]);
  const consumer = createConsumer(config, c, inputPartitions, log);
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: config.kafka.topics, fromBeginning: config.kafka.fromBeginning });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    throw err;
  }
  return { ...c, consumer };
}

/** What else is running beside the clients, stopped before them when it was started. */
export interface AlsoRunning {
  readonly health?: { stop(): void };
  readonly pushback?: { stop(): Promise<void> };
  readonly http?: { close(): Promise<void> };
}

/** Stops what watches the clients, disconnects every client, then closes the HTTP server. */
export async function closeClients(
  c: StartingClients & { readonly consumer?: Consumer },
  also: AlsoRunning,
): Promise<void> {
  c.redisHealth.stop();
  also.health?.stop();
  c.poolMonitor.stop();
  await also.pushback?.stop();
  await Promise.allSettled([
    c.consumer?.disconnect(),
    c.admin.disconnect(),
    c.es.close(),
    c.esLiveness.close(),
  ]);
  c.redis.disconnect();
  await also.http?.close();
}
