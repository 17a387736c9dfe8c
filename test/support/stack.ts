import { randomUUID } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';

/** Where the local stack listens (the same settings scripts/stack.sh reads). */
export const stackEnv = {
  kafkaBrokers: process.env.KAFKA_BROKERS ?? `127.0.0.1:${process.env.KAFKA_PORT ?? '9092'}`,
  esNode: process.env.ES_NODE ?? `http://127.0.0.1:${process.env.ES_PORT ?? '9200'}`,
  redisUrl: process.env.REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? '6379'}`,
};

export const kafkaClient = (clientId = 'rxingest-test') =>
  new Kafka({ clientId, brokers: stackEnv.kafkaBrokers.split(','), logLevel: logLevel.NOTHING });

export const esClient = () => new Client({ node: stackEnv.esNode, requestTimeout: 30_000 });

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
