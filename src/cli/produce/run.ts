import { type ConfigResourceTypes, type Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { ExplicitPartitionerKafka, kafkaClientConfig, kafkaMisconfiguration } from '../../clients/kafka.js';
import { createRedis } from '../../clients/redis.js';
import type { RedisSecurity } from '../../config/security.js';
import { type ProduceProgress, type ProduceResult, runProducer } from '../../generator/produce.js';
import { POISON_KINDS, type WorkloadShape, workloadRecords } from '../../generator/workload.js';
import { createIngestProducer, type IngestProducerStats, RedisControlSource } from '../../producer/index.js';

import type { ProduceCommandDeps, ProduceSettings } from './options.js';

/** The settings' Kafka client; kafkajs' own logging is off, errors are reported here. */
const kafkaConfig = (s: ProduceSettings): KafkaConfig =>
  kafkaClientConfig(
    { brokers: s.brokers, ...s.security },
    {
      clientId: 'rxingest-produce',
      logLevel: logLevel.NOTHING,
      connectionTimeout: 5_000,
      retry: { retries: 5, initialRetryTime: 200 },
    },
  );

/** kafkajs' ConfigResourceTypes.TOPIC (not importable by name from ESM: kafkajs' exports end in a spread). */
const TOPIC_RESOURCE = 2 as ConfigResourceTypes;

/** Bytes a record batch adds around one value (a generous bound). */
const BATCH_OVERHEAD = 512;

export const formatProgress = (
  p: ProduceProgress,
  planned: number,
  pushback?: IngestProducerStats,
): string => {
  const limit = pushback ? Object.values(pushback.limits)[0] : undefined;
  const throttled =
    limit !== undefined
      ? `, throttled to ${Math.round(limit)} msg/s (${pushback!.buffered.records} buffered)`
      : '';
  return `produce: ${p.total}/${planned} sent, ${Math.round(p.ratePerSec)} msg/s, ${Math.round(p.lagMs)} ms behind plan${throttled}`;
};

/** One run of `rxingest produce`: the topic made ready, the workload sent (within any published limit), the outcome. */
export async function produce(
  settings: ProduceSettings,
  shape: WorkloadShape,
  deps: ProduceCommandDeps,
  err: (line: string) => void,
): Promise<{ summary: ProduceResult; oversizeLeftOut: boolean; pushback?: PushbackSummary }> {
  const kafka = (deps.createKafka ?? ((c) => new ExplicitPartitionerKafka(c)))(kafkaConfig(settings));
  const { topic } = settings;
  const maxBytes = settings.workload.maxMessageBytes;
  const where = `${topic} at ${settings.brokers.join(',')}`;

  // The topic: create it (with room for oversize poison) or make sure it exists.
  let oversizeLeftOut = false;
  let missing = false;
  const admin = kafka.admin();
  try {
    await admin.connect();
    if (settings.createTopic !== undefined) {
      const created = await admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: settings.createTopic,
            configEntries: [{ name: 'max.message.bytes', value: String(maxBytes + 1024 * 1024) }],
          },
        ],
      });
      if (!settings.quiet) {
        err(
          created
            ? `produce: created ${topic} with ${settings.createTopic} partitions`
            : `produce: ${topic} exists`,
        );
      }
    }
    const topics = await admin.listTopics();
    if (!topics.includes(topic)) {
      missing = true;
    }
    if (!missing && shape.poison > 0) {
      const limit = await topicMaxMessageBytes(admin, topic);
      if (limit !== undefined && limit < maxBytes + 1024 + BATCH_OVERHEAD) {
        oversizeLeftOut = true;
        err(
          `produce: warning: ${topic} takes records up to ${limit} bytes (max.message.bytes), too few for ` +
            `oversize poison over --max-message-bytes ${maxBytes}: leaving oversize poison out ` +
            '(raise the topic’s max.message.bytes, or create it with --create-topic)',
        );
      }
    }
  } catch (e) {
    // A wrong password or an untrusted certificate: say that, not kafkajs' retry story.
    const misconfigured = kafkaMisconfiguration({ brokers: settings.brokers, ...settings.security }, e);
    if (misconfigured !== undefined) throw new Error(misconfigured, { cause: e });
    throw new Error(`Kafka admin on ${where}: ${(e as Error).message}`, { cause: e });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  if (missing)
    throw new Error(`topic ${where} does not exist: create it, or pass --create-topic <partitions>`);

  const workload = oversizeLeftOut
    ? { ...settings.workload, poisonKinds: POISON_KINDS.filter((k) => k !== 'oversize') }
    : settings.workload;

  const redis = settings.control
    ? (deps.createRedis ?? ((url: string) => defaultRedis(url, settings.control!.redisSecurity)))(
        settings.control.redisUrl,
      )
    : undefined;
  const control =
    redis && settings.control
      ? new RedisControlSource(redis, {
          keyPrefix: settings.control.keyPrefix,
          onStatus: (e) =>
            err(
              e
                ? `produce: warning: cannot read producer limits from Redis (${e.message}); sending without them`
                : 'produce: reading producer limits from Redis again',
            ),
        })
      : undefined;
  let limited = false;
  const { producer: ingest, kafkaProducer: producer } = createIngestProducer(kafka, {
    ...(control ? { control } : {}),
    onLimit: (_, rate) => {
      if (rate !== undefined) limited = true;
      if (!settings.quiet)
        err(
          rate === undefined
            ? 'produce: producer limit lifted'
            : `produce: throttled to ${Math.round(rate)} msg/s by the workers’ lag monitor`,
        );
    },
    producerConfig: {
      // Idempotent: a retried send is not written twice, so only the planned duplicates exist.
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    },
  });
  const controller = new AbortController();
  const stop = () => controller.abort();
  const handleSignals = deps.handleSignals ?? true;
  if (handleSignals) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  try {
    try {
      await producer.connect();
    } catch (e) {
      throw new Error(`cannot connect to Kafka at ${settings.brokers.join(',')}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (redis?.status === 'wait') {
      await redis.connect().catch(() => undefined); // unreachable: the control source says so once
    }
    // Read the limit and the hot clients before the first send.
    control?.watch(topic);
    await control?.refresh();
    const summary = await runProducer(
      { topic, records: workloadRecords(workload), signal: controller.signal },
      {
        producer: ingest,
        onProgress: settings.quiet ? undefined : (p) => err(formatProgress(p, shape.total, ingest.stats())),
        onRejected: (r) =>
          err(
            `produce: warning: the broker refused a ${r.value?.length ?? 0}-byte ${r.kind} record as too large`,
          ),
      },
    );
    const stats = ingest.stats();
    return {
      summary,
      oversizeLeftOut,
      ...(control
        ? {
            pushback: {
              limited,
              throttledMs: Math.round(stats.throttledMs),
              maxBufferedRecords: stats.maxBufferedRecords,
            },
          }
        : {}),
    };
  } finally {
    if (handleSignals) {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    await control?.close();
    redis?.disconnect();
    await producer.disconnect().catch(() => undefined);
  }
}

/** What push-back did to a run: whether it was limited, how long it waited for tokens, the most it buffered. */
export interface PushbackSummary {
  readonly limited: boolean;
  readonly throttledMs: number;
  readonly maxBufferedRecords: number;
}

/** The control source's Redis, with the worker's TLS settings (REDIS_CA_CERT, rediss://). */
const defaultRedis = (url: string, security: RedisSecurity) =>
  createRedis(
    { url, ...security },
    {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1_000,
      // ioredis reports every failed reconnect as an 'error' event: the control source says it once.
    },
  ).on('error', () => undefined);

async function topicMaxMessageBytes(
  admin: ReturnType<Kafka['admin']>,
  topic: string,
): Promise<number | undefined> {
  try {
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: ['max.message.bytes'] }],
    });
    const value = res.resources[0]?.configEntries.find(
      (c) => c.configName === 'max.message.bytes',
    )?.configValue;
    const n = Number(value);
    return value !== undefined && Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined; // Unknown: send anyway; a refused record is counted, not fatal.
  }
}
