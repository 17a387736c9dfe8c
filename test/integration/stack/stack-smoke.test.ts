import { afterAll, describe, expect, it } from 'vitest';
import {
  createTopics,
  esClient,
  kafkaClient,
  redisClient,
  uniqueName,
  waitFor,
} from '../../../harness/stack.js';

/** Proves the local stack is made of real servers: Kafka in, Elasticsearch out, Redis round trip. */
describe('local stack smoke test', () => {
  const es = esClient();
  const redis = redisClient();
  afterAll(async () => {
    await es.close();
    redis.disconnect();
  });

  it('moves 1,000 messages from a 4-partition topic into Elasticsearch', async () => {
    const topic = uniqueName('smoke');
    const index = uniqueName('smoke');
    await createTopics([{ topic, numPartitions: 4 }]);

    const kafka = kafkaClient();
    const admin = kafka.admin();
    await admin.connect();
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.disconnect();
    expect(meta.topics[0]?.partitions).toHaveLength(4);

    const producer = kafka.producer();
    await producer.connect();
    const messages = Array.from({ length: 1000 }, (_, i) => ({
      key: `c-${i % 50}`,
      value: JSON.stringify({ n: i }),
    }));
    await producer.send({ topic, messages });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('smoke-group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen: { n: number; partition: number }[] = [];
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          seen.push({ n: JSON.parse(m.value!.toString()).n, partition: batch.partition });
        }
      },
    });
    await waitFor('1,000 consumed messages', () => seen.length >= 1000);
    await consumer.disconnect();
    expect(new Set(seen.map((s) => s.n)).size).toBe(1000);
    expect(new Set(seen.map((s) => s.partition)).size).toBe(4);

    const operations = seen.flatMap((s) => [{ index: { _index: index, _id: String(s.n) } }, { n: s.n }]);
    const bulk = await es.bulk({ operations, refresh: 'wait_for' });
    expect(bulk.errors).toBe(false);
    const { count } = await es.count({ index });
    expect(count).toBe(1000);
    await es.indices.delete({ index });
  });

  it('round-trips a value through Redis', async () => {
    const key = uniqueName('smoke');
    await redis.set(key, 'hello', 'PX', 10_000);
    expect(await redis.get(key)).toBe('hello');
    expect(await redis.pttl(key)).toBeGreaterThan(0);
    await redis.del(key);
  });
});
