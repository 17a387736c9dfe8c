/**
 * `npm run bench -- --only hot`: partition load with and without hot-client spreading. One
 * client sends 100× as much as each of 80 others; the same messages go through the producer
 * library into three 8-partition topics: without a hot set, and with the client hot at
 * HOT_CLIENT_SPREAD 4 (the default) and 8. Per-partition record counts come from the topics'
 * end offsets. The hot set is decided by the store the worker uses (RedisHotClientStore),
 * fed the client's rate directly: the worker's detection is timed by the integration test
 * `pushback-hot-clients`, this measures only where the records land.
 */
import { randomBytes } from 'node:crypto';
import type { PartitionMetadata } from 'kafkajs';
import { barChart } from '../harness/plot.js';
import { Rng } from '../src/generator/rng.js';
import { createIngestProducer, hotClientPartitioner, RedisControlSource } from '../src/producer/index.js';
import { RedisHotClientStore } from '../src/pushback/hot-clients/monitor.js';
import type { Section, Table } from './lib/report.js';
import { ensureStack, kafkaClient, RunResources, redisClient } from './lib/stack.js';

const PARTITIONS = 8;
const HOT = 'c-hot';
const COLD = Array.from({ length: 80 }, (_, i) => `c-${String(i).padStart(3, '0')}`);
/** The hot client's share: 100 parts against 1 part for each of the 80 others. */
const HOT_SHARE = 100 / (100 + COLD.length);

export interface HotBenchmarkOptions {
  readonly quick: boolean;
  readonly log: (line: string) => void;
}

interface Run {
  readonly name: string;
  readonly spread: number | undefined;
  readonly counts: number[];
  readonly hotCounts: number[];
  readonly ms: number;
}

/** The same messages for every run (seeded): events, the hot client's 100× the others'. */
function messages(n: number): { key: string; value: string }[] {
  const rng = new Rng(2026);
  return Array.from({ length: n }, (_, i) => {
    const clientId = rng.chance(HOT_SHARE) ? HOT : rng.pick(COLD);
    const m = {
      id: rng.uuid(),
      clientId,
      type: 'event',
      ts: new Date(Date.UTC(2026, 11, 1) + i).toISOString(),
      name: 'purchase',
      data: { n: rng.int(1000) },
    };
    return { key: clientId, value: JSON.stringify(m) };
  });
}

const maxOverMean = (counts: readonly number[]) =>
  Math.max(...counts) / (counts.reduce((a, n) => a + n, 0) / counts.length);

export async function hotBenchmark(o: HotBenchmarkOptions): Promise<Section> {
  await ensureStack();
  const runId = `bench-hot-${randomBytes(3).toString('hex')}`;
  const kafka = kafkaClient('rxingest-bench-hot');
  const res = new RunResources(runId, kafka);
  const redis = redisClient();
  const keyPrefix = `${runId}:control:`;
  res.redisPrefixes.add(`${runId}:`);
  const admin = kafka.admin();
  await admin.connect();
  const count = o.quick ? 8_000 : 40_000;
  const all = messages(count);
  const runs: Run[] = [];
  try {
    for (const spread of [undefined, 4, 8]) {
      const name = spread === undefined ? 'no spreading' : `HOT_CLIENT_SPREAD=${spread}`;
      const topic = res.name(spread === undefined ? 'plain' : `spread-${spread}`);
      await res.createTopic(topic, PARTITIONS);
      if (spread !== undefined) {
        // What a worker decides after one interval of the client at 1,000 msg/s.
        const store = new RedisHotClientStore(redis, { keyPrefix, intervalMs: 60_000, spread });
        await store.report(topic, 1, [{ key: HOT, count: 60_000, error: 0 }]);
        await store.decide(topic, 1, { enterRatePerSec: 100, leaveRatePerSec: 50 });
      }
      const control = new RedisControlSource(redis, { keyPrefix });
      control.watch(topic);
      await control.refresh();
      const { producer, kafkaProducer } = createIngestProducer(kafka, { control });
      await kafkaProducer.connect();
      const started = performance.now();
      try {
        for (let i = 0; i < all.length; i += 500)
          await producer.send({ topic, messages: all.slice(i, i + 500) });
        await producer.close();
      } finally {
        await control.close();
        await kafkaProducer.disconnect();
      }
      const ms = performance.now() - started;
      const ends = await admin.fetchTopicOffsets(topic);
      const counts = Array.from({ length: PARTITIONS }, (_, p) =>
        Number(ends.find((e) => e.partition === p)?.high ?? 0),
      );
      // Where the hot client's records went: the partitioner is deterministic, so replaying
      // it over the same keys and values (with the same hot set) tells without reading back.
      const hotCounts = spreadOf(all, spread);
      runs.push({ name, spread, counts, hotCounts, ms });
      o.log(`  ${name}: per partition ${counts.join(' / ')} (max/mean ${maxOverMean(counts).toFixed(2)})`);
    }
  } finally {
    await admin.disconnect();
    const problems = await res.cleanUp();
    if (problems.length > 0) o.log(`  clean-up problems: ${problems.join('; ')}`);
    redis.disconnect();
  }
  return section(runs, count);
}

/** The hot client's records per partition, by the library's partitioner itself. */
function spreadOf(all: readonly { key: string; value: string }[], spread: number | undefined): number[] {
  const out = Array.from({ length: PARTITIONS }, () => 0);
  const hot = new Map(spread === undefined ? [] : [[HOT, spread]]);
  const partitioner = hotClientPartitioner(() => hot)();
  const partitionMetadata = Array.from(
    { length: PARTITIONS },
    (_, partitionId) =>
      ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }) as PartitionMetadata,
  );
  for (const m of all) {
    if (m.key !== HOT) continue;
    out[partitioner({ topic: 't', partitionMetadata, message: m })]!++;
  }
  return out;
}

function section(runs: readonly Run[], count: number): Section {
  const table: Table = {
    title: `${count.toLocaleString('en')} messages, one client at 100× each of ${COLD.length} others (${Math.round(HOT_SHARE * 100)}% of the traffic), ${PARTITIONS} partitions`,
    head: ['partition', ...runs.map((r) => r.name)],
    rows: [
      ...Array.from({ length: PARTITIONS }, (_, p) => [
        String(p),
        ...runs.map((r) => `${r.counts[p]} (hot ${r.hotCounts[p]})`),
      ]),
      ['max / mean', ...runs.map((r) => maxOverMean(r.counts).toFixed(2))],
      [
        'max / min',
        ...runs.map((r) => (Math.max(...r.counts) / Math.max(1, Math.min(...r.counts))).toFixed(1)),
      ],
      ['partitions with the hot client', ...runs.map((r) => String(r.hotCounts.filter((n) => n > 0).length))],
      ['sent in (ms)', ...runs.map((r) => String(Math.round(r.ms)))],
    ],
  };
  return {
    id: 'hot',
    title: 'Hot clients: partition load with and without spreading',
    tables: [table],
    targets: [],
    notes: [
      'Each column is its own 8-partition topic with the same seeded messages sent through the producer library (`createIngestProducer` with a `RedisControlSource`); counts are the partitions’ end offsets. “hot n” is the hot client’s share of a partition.',
      'Spread over `s` partitions, the hot client puts 1/s of its records on each of `s` consecutive partitions after its own; the others stay where murmur2 puts their keys, so what is left uneven with spread 8 is theirs (80 keys over 8 partitions).',
      'The hot set comes from the store a worker uses (RedisHotClientStore), fed the rate directly; how fast a running worker marks a client hot is measured by the integration test `pushback-hot-clients` (1.3–1.9 s with HOT_CLIENT_INTERVAL_MS=1000).',
    ],
    plots: [
      {
        file: 'hot-partition-load.svg',
        title: 'Records per partition: one 100× client, without and with spreading',
        svg: barChart({
          title: 'Records per partition: one 100× client, without and with spreading',
          categories: Array.from({ length: PARTITIONS }, (_, p) => `p${p}`),
          series: runs.map((r) => ({ name: r.name, values: r.counts })),
          unit: 'records',
        }),
      },
    ],
    data: runs,
  };
}
