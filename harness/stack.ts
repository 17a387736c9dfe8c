import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Client } from '@elastic/elasticsearch';
import { Redis } from 'ioredis';
import { type Admin, type ITopicConfig, Kafka, logLevel } from 'kafkajs';
import { createElasticsearch } from '../src/clients/elasticsearch.js';
import { type EngineSetting, engineFromSetting } from '../src/clients/search-engine.js';

const run = promisify(execFile);

/** Where the local stack listens (the same settings scripts/stack.sh reads). */
export const stackEnv = {
  kafkaBrokers: process.env.KAFKA_BROKERS ?? `127.0.0.1:${process.env.KAFKA_PORT ?? '9092'}`,
  esNode: process.env.ES_NODE ?? `http://127.0.0.1:${process.env.ES_PORT ?? '9200'}`,
  redisUrl: process.env.REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? '6379'}`,
};

export const kafkaClient = (clientId = 'rxingest-test') =>
  new Kafka({ clientId, brokers: stackEnv.kafkaBrokers.split(','), logLevel: logLevel.NOTHING });

/**
 * A client for ES_NODE in the dialect ES_ENGINE names (e.g. `ES_NODE=http://127.0.0.1:9220
 * ES_ENGINE=opensearch-2` points the benchmarks at an OpenSearch); Elasticsearch 9's by default.
 */
export const esClient = (requestTimeout = 30_000): Client =>
  createElasticsearch({ node: stackEnv.esNode }, { requestTimeout }, stackEngine());

/** The engine ES_ENGINE names; undefined (Elasticsearch 9) when it is unset or `auto`. */
export const stackEngine = () =>
  engineFromSetting((process.env.ES_ENGINE as EngineSetting | undefined) ?? 'auto');

export const redisClient = () =>
  new Redis(stackEnv.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 });

/** A name no other test or run uses, so tests never see each other's data. */
export const uniqueName = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

export async function createTopics(topics: { topic: string; numPartitions: number }[]): Promise<void> {
  const admin = kafkaClient('rxingest-test-admin').admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics, waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

/**
 * createTopics, waiting until every partition has a leader. On a cluster, kafkajs's own wait
 * may ask a broker that has not heard of the new topic yet, and gives up on its
 * UNKNOWN_TOPIC_OR_PARTITION: the topics exist, so wait for the metadata to spread instead.
 */
export async function createTopicsWithLeaders(admin: Admin, topics: ITopicConfig[]): Promise<void> {
  try {
    await createTopicsOnceControllerKnown(admin, topics);
  } catch (err) {
    if ((err as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw err;
    await waitFor(
      `leaders for ${topics.map((t) => t.topic).join(', ')}`,
      async () => {
        const meta = await admin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) });
        return meta.topics.every((t) => t.partitions.length > 0 && t.partitions.every((x) => x.leader >= 0));
      },
      { timeoutMs: 30_000 },
    );
  }
}

/**
 * A cluster just started may answer metadata before its brokers know the active controller
 * (controller id -1): kafkajs's createTopics then fails at once with KafkaJSBrokerNotFound
 * ("Broker -1 not found"), before sending anything. Ask again until a controller is known.
 */
async function createTopicsOnceControllerKnown(admin: Admin, topics: ITopicConfig[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await admin.createTopics({ topics, waitForLeaders: true });
      return;
    } catch (err) {
      if ((err as Error).name !== 'KafkaJSBrokerNotFound' || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** Polls a condition until it holds or the timeout passes; never a blind sleep. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 60_000, intervalMs = 200 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface ReadRecord {
  partition: number;
  offset: number;
  key: string | null;
  /** The key's exact bytes (`key` is them decoded as UTF-8). */
  keyBytes: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

/**
 * Reads a whole topic, read_committed, with kcat (librdkafka): a Kafka client other than
 * the worker's, as the contract's outside checks use. kafkajs's own read_committed
 * filtering lets some records of aborted transactions through (seen here after a SIGKILL),
 * so it cannot be the judge of exactly-once. Two passes: JSON for headers, and a
 * length-prefixed raw format for the exact key and value bytes (JSON mangles non-UTF-8).
 */
export async function readCommitted(
  topic: string,
  /**
   * Another cluster (the secured stack): its brokers and kcat's -X options for TLS/SASL.
   * `isolation` read_uncommitted shows the records of aborted transactions too, as the Java
   * consumer's default does.
   */
  {
    brokers = stackEnv.kafkaBrokers,
    kcatOptions = [] as string[],
    isolation = 'read_committed' as 'read_committed' | 'read_uncommitted',
  } = {},
): Promise<ReadRecord[]> {
  const kcat = (format: string[]) =>
    run(
      'kcat',
      [
        '-C',
        ...kcatOptions,
        '-b',
        brokers,
        '-t',
        topic,
        '-e',
        '-q',
        '-X',
        `isolation.level=${isolation}`,
        ...format,
      ],
      { maxBuffer: 1024 * 1024 * 1024, encoding: 'buffer' },
    );
  const [json, raw] = await Promise.all([kcat(['-J']), kcat(['-f', '%p %o %K %S\n%k%s\n'])]);

  const bytes = new Map<string, { key: Buffer | null; value: Buffer | null }>();
  const out = raw.stdout;
  for (let at = 0; at < out.length; ) {
    const eol = out.indexOf(0x0a, at);
    const [p, o, k, v] = out.subarray(at, eol).toString('latin1').split(' ').map(Number) as [
      number,
      number,
      number,
      number,
    ];
    let pos = eol + 1;
    const key = k >= 0 ? out.subarray(pos, pos + k) : null;
    pos += Math.max(k, 0);
    const value = v >= 0 ? out.subarray(pos, pos + v) : null;
    pos += Math.max(v, 0);
    bytes.set(`${p}:${o}`, { key, value });
    at = pos + 1;
  }

  return json.stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = JSON.parse(line) as { partition: number; offset: number; headers?: string[] };
      const headers: Record<string, string> = {};
      for (let i = 0; i + 1 < (m.headers?.length ?? 0); i += 2) headers[m.headers![i]!] = m.headers![i + 1]!;
      const b = bytes.get(`${m.partition}:${m.offset}`);
      if (b === undefined)
        throw new Error(`kcat: ${topic} ${m.partition}:${m.offset} missing from the raw pass`);
      return {
        partition: m.partition,
        offset: m.offset,
        key: b.key?.toString('utf8') ?? null,
        keyBytes: b.key,
        value: b.value,
        headers,
      };
    });
}
