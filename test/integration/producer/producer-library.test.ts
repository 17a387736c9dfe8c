import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CommanderError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, redisClient, stackEnv, uniqueName } from '../../../harness/stack.js';
import { produceCommand } from '../../../src/cli/produce-command.js';
import { BufferFullError, type createIngestProducer } from '../../../src/producer/index.js';
import { RedisHotClientStore } from '../../../src/pushback/hot-clients/monitor.js';
import { ProducerLimitPublisher } from '../../../src/pushback/lag/producer-limits.js';
import { libraryProducer } from '../../support/deployments/library-producer.js';

const run = promisify(execFile);
const redis = redisClient();
const prefix = `${uniqueName('rxprod')}:`;

afterAll(async () => {
  const left = await redis.keys(`${prefix}*`);
  if (left.length > 0) await redis.del(...left);
  redis.disconnect();
});

/** Every record of a topic as kcat (librdkafka) sees it: partition, key, value, broker timestamp. */
async function records(topic: string) {
  const { stdout } = await run(
    'kcat',
    ['-C', '-b', stackEnv.kafkaBrokers, '-t', topic, '-e', '-q', '-f', '%p\t%k\t%s\t%T\n'],
    { maxBuffer: 256 * 1024 * 1024 },
  );
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [p, key, value, ts] = line.split('\t');
      return { partition: Number(p), key: key!, value: value!, ts: Number(ts) };
    });
}

const limit = (topic: string, ratePerSec: number) =>
  new ProducerLimitPublisher(redis, { keyPrefix: prefix, group: 'g', ttlMs: 120_000 }).publish(
    topic,
    ratePerSec,
    1,
  );

const ingestProducer = (topic: string, options: Parameters<typeof createIngestProducer>[1] = {}) =>
  libraryProducer(kafkaClient(uniqueName('lib')), redis, { keyPrefix: prefix, watch: topic, options });

const messages = (n: number, from = 0, key = (i: number) => `c-${i % 20}`) =>
  Array.from({ length: n }, (_, i) => ({ key: key(from + i), value: `m-${from + i}` }));

/** Records per second over the span of their broker timestamps, first to last. */
const rateOf = (rs: { ts: number }[]) => {
  const ts = rs.map((r) => r.ts).sort((a, b) => a - b);
  return ((rs.length - 1) * 1000) / (ts.at(-1)! - ts[0]!);
};

describe('producer library against real Kafka and Redis', () => {
  it('sends no faster than the published limit (measured on the broker timestamps)', async () => {
    const topic = uniqueName('limited');
    await createTopics([{ topic, numPartitions: 2 }]);
    await limit(topic, 400);
    const p = await ingestProducer(topic);
    const start = Date.now();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => p.producer.send({ topic, messages: messages(100, i * 100) })),
    );
    const tookMs = Date.now() - start;
    expect(p.producer.stats().limits).toEqual({ [topic]: 400 });
    await p.close();
    const got = await records(topic);
    expect(got).toHaveLength(2000);
    const rate = rateOf(got);
    console.log(
      `limit 400 msg/s: measured ${rate.toFixed(0)} msg/s on the broker, 2000 records in ${tookMs} ms`,
    );
    expect(rate).toBeLessThanOrEqual(400 * 1.1);
    expect(rate).toBeGreaterThan(400 * 0.6);
    // Order per key holds (one request at a time per topic).
    for (let k = 0; k < 20; k++) {
      const seq = got.filter((r) => r.key === `c-${k}`).map((r) => Number(r.value.slice(2)));
      expect(seq).toEqual([...seq].sort((a, b) => a - b));
    }
  });

  it('two producers share one limit', async () => {
    const topic = uniqueName('shared-limit');
    await createTopics([{ topic, numPartitions: 2 }]);
    await limit(topic, 300);
    const [a, b] = [await ingestProducer(topic), await ingestProducer(topic)];
    await Promise.all([a.control.refresh(), b.control.refresh()]); // both registered
    await Promise.all([a.control.refresh(), b.control.refresh()]);
    await Promise.all([
      a.producer.send({ topic, messages: messages(600, 0) }),
      b.producer.send({ topic, messages: messages(600, 600) }),
    ]);
    await Promise.all([a.close(), b.close()]);
    const got = await records(topic);
    expect(got).toHaveLength(1200);
    const rate = rateOf(got);
    console.log(`limit 300 msg/s shared by 2 producers: measured ${rate.toFixed(0)} msg/s together`);
    expect(rate).toBeLessThanOrEqual(300 * 1.15);
  });

  it('buffers within its bound when throttled: refuses (reject) or waits (block), and delivers everything it took', async () => {
    const topic = uniqueName('buffered');
    await createTopics([{ topic, numPartitions: 1 }]);
    await limit(topic, 100);
    const rejecting = await ingestProducer(topic, { maxBufferedRecords: 100, whenFull: 'reject' });
    const first = rejecting.producer.send({ topic, messages: messages(100) });
    await expect(rejecting.producer.send({ topic, messages: messages(1, 100) })).rejects.toBeInstanceOf(
      BufferFullError,
    );
    expect(rejecting.producer.stats()).toMatchObject({ refused: 1 });
    expect(rejecting.producer.stats().buffered.records).toBeGreaterThan(50);
    await first;
    await rejecting.close();

    const blocking = await ingestProducer(topic, { maxBufferedRecords: 100, whenFull: 'block' });
    const sends = [0, 1, 2].map((i) =>
      blocking.producer.send({ topic, messages: messages(80, 100 + i * 80) }),
    );
    await Promise.all(sends);
    const stats = blocking.producer.stats();
    expect(stats.maxBufferedRecords).toBeLessThanOrEqual(100);
    expect(stats.blockedMs).toBeGreaterThan(0);
    await blocking.close();
    const got = await records(topic);
    expect(got.map((r) => r.value)).toEqual(messages(340).map((m) => m.value)); // nothing lost, in order
  });

  it('spreads a hot client over several partitions and leaves the rest on their key’s partition (as librdkafka puts them)', async () => {
    const topic = uniqueName('spread');
    const reference = uniqueName('spread-ref');
    await createTopics([
      { topic, numPartitions: 8 },
      { topic: reference, numPartitions: 8 },
    ]);
    const store = new RedisHotClientStore(redis, { keyPrefix: prefix, intervalMs: 60_000, spread: 4 });
    await store.report(topic, 1, [{ key: 'c-hot', count: 60_000 * 2, error: 0 }]);
    expect((await store.decide(topic, 1, { enterRatePerSec: 1, leaveRatePerSec: 0 })).hot).toEqual(
      new Set(['c-hot']),
    );

    const p = await ingestProducer(topic);
    const others = Array.from({ length: 60 }, (_, i) => `client-${i}`);
    const sent = [
      ...messages(800, 0, () => 'c-hot'),
      ...others.flatMap((k, i) => messages(5, 10_000 + i * 5, () => k)),
    ];
    for (let i = 0; i < sent.length; i += 100)
      await p.producer.send({ topic, messages: sent.slice(i, i + 100) });
    await p.close();

    // The reference: the same keys through librdkafka's murmur2 partitioner (the Java client's).
    const input = others.map((k) => `${k}\t1`).join('\n');
    await new Promise<void>((resolve, reject) => {
      const child = execFile(
        'kcat',
        ['-P', '-b', stackEnv.kafkaBrokers, '-t', reference, '-K', '\t', '-X', 'partitioner=murmur2'],
        (err) => (err ? reject(err) : resolve()),
      );
      child.stdin!.end(`${input}\n`);
    });
    const expected = new Map((await records(reference)).map((r) => [r.key, r.partition]));

    const got = await records(topic);
    expect(got).toHaveLength(sent.length);
    const hot = got.filter((r) => r.key === 'c-hot');
    const perPartition = new Map<number, number>();
    for (const r of hot) perPartition.set(r.partition, (perPartition.get(r.partition) ?? 0) + 1);
    console.log(`hot client over partitions: ${JSON.stringify(Object.fromEntries(perPartition))}`);
    expect(perPartition.size).toBe(4);
    for (const n of perPartition.values()) expect(n).toBeGreaterThan(800 * 0.15); // roughly a quarter each
    for (const k of others) {
      const partitions = new Set(got.filter((r) => r.key === k).map((r) => r.partition));
      expect([...partitions]).toEqual([expected.get(k)]);
    }
  });

  it('`rxingest produce --redis-url` honours the limit and reports it', async () => {
    const topic = uniqueName('produce-cli');
    await createTopics([{ topic, numPartitions: 2 }]);
    await limit(topic, 200);
    const out: string[] = [];
    const err: string[] = [];
    const cmd = produceCommand({
      env: {},
      handleSignals: false,
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    })
      .exitOverride()
      .configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => err.push(s) });
    try {
      await cmd.parseAsync(
        [
          '--brokers',
          stackEnv.kafkaBrokers,
          '--topic',
          topic,
          '--count',
          '600',
          '--rate',
          '100000',
          '--poison-share',
          '0',
          '--redis-url',
          stackEnv.redisUrl,
          '--control-key-prefix',
          prefix,
          '--json',
        ],
        { from: 'user' },
      );
    } catch (e) {
      if (!(e instanceof CommanderError)) throw e;
      throw new Error(`produce failed: ${err.join('')}`);
    }
    const summary = JSON.parse(out.join(''));
    expect(summary.total).toBe(600);
    expect(summary.pushback).toMatchObject({ limited: true });
    expect(summary.ratePerSec).toBeLessThanOrEqual(200 * 1.15);
    expect(err.join('\n')).toContain('throttled to 200 msg/s');
    expect(err.join('\n')).not.toContain('cannot read producer limits'); // connected before the first read
    expect(await records(topic)).toHaveLength(600);
  });
});
