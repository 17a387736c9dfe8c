import kafkajs from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import {
  CODECS,
  type Codec,
  produceWithJavaClient,
  produceWithKcat,
} from '../../../harness/producers/compressing-producers.js';
import { kafkaClient, readCommitted, uniqueName } from '../../../harness/stack.js';
import { supportAllCompressionCodecs } from '../../../src/clients/kafka-compression.js';
import { planWorkload, type WorkloadRecord } from '../../../src/generator/workload.js';

const { CompressionTypes } = kafkajs;

/**
 * Batches compressed by other clients, with each of Kafka's codecs, through a real worker:
 * kcat (librdkafka: raw snappy, lz4 frames, zstd) and the Java client (snappy-java's framed
 * stream, Kafka's own lz4 frame writer). kafkajs alone reads only gzip; without the codecs
 * the worker's first fetch of any other batch throws and the worker stops. The whole topic
 * must come out as the contract says: every event indexed once, profiles merged, triggers
 * once, committed to the end.
 */
describe('a real worker reading batches compressed by other Kafka clients', () => {
  let p: Pipeline | undefined;
  afterAll(async () => {
    await p?.cleanup();
  });

  it('ingests gzip, snappy, lz4 and zstd batches from kcat and from the Java client, in order, once', async () => {
    p = await Pipeline.create('compressed', { partitions: 1 });
    const plan = planWorkload({
      seed: 41,
      count: 1_600,
      clients: 40,
      poisonShare: 0, // poison bytes cannot travel as lines of text
      duplicateShare: 0.02,
      shuffleVersions: 0.1,
    });
    const producers = { kcat: produceWithKcat, java: produceWithJavaClient };
    const slices: { by: keyof typeof producers; codec: Codec; records: WorkloadRecord[] }[] = [];
    const size = Math.ceil(plan.length / (2 * CODECS.length));
    for (const by of ['kcat', 'java'] as const)
      for (const codec of CODECS) {
        const records = plan.slice(slices.length * size, (slices.length + 1) * size);
        slices.push({ by, codec, records });
      }
    // One after the other into one partition: the topic's order is the plan's order.
    for (const { by, codec, records } of slices) await producers[by](p.names.topic, records, codec);
    const admin = kafkaClient().admin();
    await admin.connect();
    try {
      const [end] = await admin.fetchTopicOffsets(p.names.topic);
      expect(Number(end!.high)).toBe(plan.length);
    } finally {
      await admin.disconnect();
    }
    p.setProduced(plan);
    const expected = p.expected();
    expect(expected.events.size).toBeGreaterThan(800);
    expect(expected.profiles.size).toBeGreaterThan(30);

    const worker = p.spawn('w');
    await p.waitForEnd(120_000);
    await p.assertContract(expected);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});

/**
 * The other way: rxingest's own clients write snappy and lz4 that other clients read (zstd
 * it reads only, and says so).
 */
describe('kafkajs with rxingest codecs, producing', () => {
  const topic = uniqueName('compressed-out');
  const kafka = kafkaClient();
  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('writes snappy and lz4 batches the broker accepts and kcat reads back byte for byte; refuses zstd in one line', async () => {
    supportAllCompressionCodecs();
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    const sent: string[] = [];
    try {
      for (const [name, compression] of [
        ['snappy', CompressionTypes.Snappy],
        ['lz4', CompressionTypes.LZ4],
      ] as const) {
        // Repetitive enough to compress, long enough for more than one snappy/lz4 block.
        const messages = Array.from({ length: 300 }, (_, i) => ({
          key: `k-${i % 7}`,
          value: JSON.stringify({ codec: name, i, pad: 'x'.repeat(i * 3) }),
        }));
        await producer.send({ topic, compression, messages });
        sent.push(...messages.map((m) => m.value));
      }
      await expect(
        producer.send({ topic, compression: CompressionTypes.ZSTD, messages: [{ value: 'z' }] }),
      ).rejects.toThrow(/zstd: rxingest reads zstd-compressed batches but does not write them/);
    } finally {
      await producer.disconnect();
    }
    const read = await readCommitted(topic);
    expect(read.map((r) => String(r.value))).toEqual(sent);
  });
});
