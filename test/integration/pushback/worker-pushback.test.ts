import { afterAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, redisClient, uniqueName, waitFor } from '../../../harness/stack.js';
import { loadConfig } from '../../../src/config/config.js';
import { publishShedDecision } from '../../../src/protocol/shed-channel.js';
import type { BreakerChange } from '../../../src/pushback/admission/circuit-breaker.js';
import type { ShedChange } from '../../../src/pushback/shedding/controller.js';
import { WorkerPushback } from '../../../src/pushback/worker-pushback.js';

const redis = redisClient();
const prefix = `${uniqueName('rxwp')}:`;
afterAll(async () => {
  const left = await redis.keys(`${prefix}*`);
  if (left.length > 0) await redis.del(...left);
  redis.disconnect();
});

describe('WorkerPushback: the mechanisms wired together (real Kafka and Redis)', () => {
  it('manual shedding, breaker-driven shedding, group lag and hot clients reach the worker’s hooks', async () => {
    const orders = uniqueName('orders');
    const reviews = uniqueName('reviews');
    const group = uniqueName('wp-group');
    const controlTopic = uniqueName('wp-control');
    await createTopics([
      { topic: orders, numPartitions: 2 },
      { topic: reviews, numPartitions: 1 },
    ]);
    const config = loadConfig({
      INGEST_TOPICS: `${orders},${reviews}`,
      INGEST_GROUP: group,
      TOPIC_PRIORITIES: `${orders}:high,${reviews}:low`,
      CONTROL_TOPIC: controlTopic,
      CONTROL_KEY_PREFIX: prefix,
      LAG_INTERVAL_MS: '300',
      BREAKER_MIN_REQUESTS: '3',
      BREAKER_OPEN_MS: '60000',
      BREAKER_OPEN_MAX_MS: '60000',
      HOT_CLIENT_INTERVAL_MS: '1000',
      HOT_CLIENT_ENTER_RATE: '50',
      HOT_CLIENT_LEAVE_RATE: '10',
    });
    const kafka = kafkaClient('wp');
    const admin = kafka.admin();
    const producer = kafka.producer();
    await Promise.all([admin.connect(), producer.connect()]);
    const shedChanges: ShedChange[] = [];
    const breakerChanges: BreakerChange[] = [];
    const limits: number[] = [];
    const hot: string[] = [];
    const lags: number[] = [];
    const errors: string[] = [];
    const pushback = new WorkerPushback({
      settings: config.control,
      group,
      topics: config.kafka.topics,
      kafka,
      admin,
      redis,
      hooks: {
        onShedChange: (c) => shedChanges.push(c),
        onBreakerChange: (c) => breakerChanges.push(c),
        onConcurrencyLimit: (n) => limits.push(n),
        onHotClients: (topic, set) => {
          if (topic === orders) hot.push(...set);
        },
        onLag: (samples) => lags.push(samples.get(orders)?.lag ?? -1),
        onError: (what, err) => errors.push(`${what}: ${(err as Error).message}`),
      },
    });
    try {
      await pushback.start(() => 0);
      expect(limits).toEqual([4]);

      // An operator sheds the high-priority topic by hand.
      await publishShedDecision(producer, controlTopic, group, orders, {
        by: 'test',
        at: new Date().toISOString(),
      });
      await waitFor('the manual shed to reach the worker', () =>
        shedChanges.some((c) => c.shed.some((s) => s.topic === orders && s.reason === 'manual')),
      );

      // Elasticsearch fails: the breaker opens and the low-priority topic is shed too.
      for (let i = 0; i < 3; i++) (await pushback.gate.acquire()).release({ result: 'failed' });
      expect(breakerChanges.map((c) => c.to)).toEqual(['open']);
      expect(shedChanges.at(-1)).toEqual({ shed: [{ topic: reviews, reason: 'breaker' }], resumed: [] });

      // The group's lag, from the broker.
      await producer.send({
        topic: orders,
        messages: Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: 'v' })),
      });
      await waitFor('the lag monitor to see the lag', () => lags.includes(50));

      // A client far above the enter rate becomes hot within two intervals.
      const feeding = setInterval(() => {
        for (let i = 0; i < 100; i++) pushback.observeClient(orders, 'c-hot');
        pushback.observeClient(orders, 'c-cold');
      }, 100);
      try {
        await waitFor('c-hot to enter the hot set', () => hot.includes('c-hot'), { timeoutMs: 10_000 });
      } finally {
        clearInterval(feeding);
      }
      expect(hot).not.toContain('c-cold');
      expect(errors).toEqual([]);
    } finally {
      await pushback.stop();
      await Promise.all([admin.disconnect(), producer.disconnect()]);
    }
  });
});
