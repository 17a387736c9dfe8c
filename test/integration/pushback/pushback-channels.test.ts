import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, redisClient, uniqueName, waitFor } from '../../../harness/stack.js';
import { RedisControlSource } from '../../../src/producer/index.js';
import { controlKeys } from '../../../src/protocol/control-keys.js';
import { RedisHotClientStore } from '../../../src/pushback/hot-clients/monitor.js';
import { LagMonitor } from '../../../src/pushback/lag/monitor.js';
import { ProducerLimitPublisher } from '../../../src/pushback/lag/producer-limits.js';
import { sampleGroupLag } from '../../../src/pushback/lag/sampler.js';

const redis = redisClient();
const kafka = kafkaClient('pushback-channels');
const admin = kafka.admin();
const producer = kafka.producer();
const prefix = `${uniqueName('rxctl')}:`;
const keys = controlKeys(prefix);

beforeAll(async () => {
  await Promise.all([admin.connect(), producer.connect()]);
});
afterAll(async () => {
  const left = await redis.keys(`${prefix}*`);
  if (left.length > 0) await redis.del(...left);
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  redis.disconnect();
});

const produce = (topic: string, n: number) =>
  producer.send({
    topic,
    messages: Array.from({ length: n }, (_, i) => ({ key: `c-${i % 10}`, value: `v${i}` })),
  });

describe('lag monitor → producer limit in Redis → producers (real Kafka and Redis)', () => {
  it('samples the group lag from the broker, publishes a limit while it grows, lifts it when caught up', async () => {
    const topic = uniqueName('lagged');
    const group = uniqueName('lag-group');
    await createTopics([{ topic, numPartitions: 2 }]);
    const limits = new ProducerLimitPublisher(redis, { keyPrefix: prefix, group, ttlMs: 10_000 });
    const monitor = new LagMonitor(
      { intervalMs: 1_000, policy: { lagHigh: 100, lagLow: 10, headroom: 0.2, minRatePerSec: 5 } },
      { sample: () => sampleGroupLag(admin, group, [topic]), limits },
    );
    const source = new RedisControlSource(redis, { keyPrefix: prefix, refreshMs: 60_000 });

    await produce(topic, 300);
    await monitor.tick();
    const first = monitor.states.get(topic)!;
    expect(first.lag).toBe(300); // nothing committed: counted from the log start
    expect(first.limitPerSec).toBeUndefined(); // one sample: not known to grow yet
    const partitions = (await sampleGroupLag(admin, group, [topic])).get(topic)!.partitions;
    expect(partitions.map((p) => p.lag).reduce((a, b) => a + b)).toBe(300);

    // Growing, nothing drained: limited to the minimum once the drain has been measured
    // over three intervals (no limit before: a worker that just started drains little).
    for (let k = 1; k <= 3; k++) {
      expect(monitor.states.get(topic)!.limitPerSec).toBeUndefined();
      await produce(topic, 300);
      await monitor.tick();
    }
    expect(monitor.states.get(topic)!.limitPerSec).toBe(5);
    const stored = JSON.parse((await redis.get(keys.limit(topic)))!);
    expect(stored).toMatchObject({ ratePerSec: 5, group, lag: 1200 });
    const ttl = await redis.pttl(keys.limit(topic));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(10_000);
    source.watch(topic);
    await source.refresh();
    expect(source.limitFor(topic)).toBe(5);

    // The group catches up (its offsets move to the end) and producers stop: the limit grows
    // until it is plainly unused (twice the drain rate, lag still low), then it is lifted.
    const ends = await admin.fetchTopicOffsets(topic);
    await admin.setOffsets({
      groupId: group,
      topic,
      partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })),
    });
    await monitor.tick();
    expect(monitor.states.get(topic)!.lag).toBe(0);
    for (let k = 0; k < 40 && monitor.states.get(topic)!.limitPerSec !== undefined; k++) {
      await new Promise((r) => setTimeout(r, 20)); // intervals of a few ms: the monitor needs time to pass
      await monitor.tick();
    }
    expect(monitor.states.get(topic)!.limitPerSec).toBeUndefined();
    expect(await redis.exists(keys.limit(topic))).toBe(0);
    await source.refresh();
    expect(source.limitFor(topic)).toBeUndefined();
    await source.close();
  });

  it('with two groups on a topic the lower limit holds until its group lifts it', async () => {
    const topic = uniqueName('shared');
    const a = new ProducerLimitPublisher(redis, { keyPrefix: prefix, group: 'a', ttlMs: 10_000 });
    const b = new ProducerLimitPublisher(redis, { keyPrefix: prefix, group: 'b', ttlMs: 10_000 });
    expect(await a.publish(topic, 100, 5000)).toBe(true);
    expect(await b.publish(topic, 500, 4000)).toBe(false);
    await b.lift(topic); // not b's: stays
    expect(JSON.parse((await redis.get(keys.limit(topic)))!)).toMatchObject({ group: 'a', ratePerSec: 100 });
    expect(await a.publish(topic, 300, 3000)).toBe(true); // its own: raised
    expect(await b.publish(topic, 200, 4000)).toBe(true); // lower: wins
    await a.lift(topic);
    expect(JSON.parse((await redis.get(keys.limit(topic)))!)).toMatchObject({ group: 'b', ratePerSec: 200 });
    await b.lift(topic);
    expect(await redis.exists(keys.limit(topic))).toBe(0);
  });

  it('a limit that is not refreshed expires (a dead worker lifts its limit)', async () => {
    const topic = uniqueName('expiring');
    const p = new ProducerLimitPublisher(redis, { keyPrefix: prefix, group: 'g', ttlMs: 1_000 });
    await p.publish(topic, 50, 1000);
    expect(await redis.exists(keys.limit(topic))).toBe(1);
    await waitFor('the limit to expire', async () => (await redis.exists(keys.limit(topic))) === 0, {
      timeoutMs: 5_000,
    });
  });

  it('producers share a limit equally, and a producer that closes gives its share back', async () => {
    const topic = uniqueName('sharing');
    await new ProducerLimitPublisher(redis, { keyPrefix: prefix, group: 'g', ttlMs: 10_000 }).publish(
      topic,
      300,
      1,
    );
    const sources = [1, 2, 3].map(
      () => new RedisControlSource(redis, { keyPrefix: prefix, refreshMs: 60_000 }),
    );
    for (const s of sources) s.watch(topic);
    await Promise.all(sources.map((s) => s.refresh()));
    await Promise.all(sources.map((s) => s.refresh())); // everyone registered: each sees 3 producers
    expect(sources.map((s) => s.limitFor(topic))).toEqual([100, 100, 100]);
    await sources[2]!.close();
    await sources[0]!.refresh();
    expect(sources[0]!.limitFor(topic)).toBe(150);
    await Promise.all(sources.slice(0, 2).map((s) => s.close()));
  });

  it('hot sets: totals over workers, enter above the rate, stay between the rates, leave below (real Redis)', async () => {
    const topic = uniqueName('hot');
    const store = () => new RedisHotClientStore(redis, { keyPrefix: prefix, intervalMs: 1_000, spread: 4 });
    const [w1, w2] = [store(), store()];
    const s = { enterRatePerSec: 1000, leaveRatePerSec: 500 };
    // Interval 1: two workers each see 600/s of c-hot (spread over their partitions): 1200/s in total.
    await w1.report(topic, 1, [
      { key: 'c-hot', count: 600, error: 0 },
      { key: 'c-1', count: 5, error: 0 },
    ]);
    await w2.report(topic, 1, [{ key: 'c-hot', count: 600, error: 0 }]);
    expect(await w1.decide(topic, 1, s)).toMatchObject({ entered: ['c-hot'], left: [] });
    expect(await w2.read(topic)).toEqual(new Map([['c-hot', 4]]));
    const ttl = await redis.pttl(keys.hot(topic));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3_000);
    // Interval 2: 300 + 300 = 600/s: between the rates, stays hot (hysteresis).
    await w1.report(topic, 2, [{ key: 'c-hot', count: 300, error: 0 }]);
    await w2.report(topic, 2, [{ key: 'c-hot', count: 300, error: 0 }]);
    expect((await w2.decide(topic, 2, s)).hot).toEqual(new Set(['c-hot']));
    // Interval 3: an upper bound of 450/s: cools.
    await w1.report(topic, 3, [{ key: 'c-hot', count: 450, error: 400 }]);
    expect(await w1.decide(topic, 3, s)).toMatchObject({ entered: [], left: ['c-hot'] });
    expect(await redis.exists(keys.hot(topic))).toBe(0);
    // A sketch's overestimate alone does not make a client hot: the lower bound must reach the rate.
    await w1.report(topic, 4, [{ key: 'c-2', count: 1500, error: 800 }]);
    expect((await w1.decide(topic, 4, s)).hot.size).toBe(0);
  });
});
