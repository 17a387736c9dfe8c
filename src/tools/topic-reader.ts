import { randomUUID } from 'node:crypto';
import type { Admin, IHeaders, Kafka, KafkaMessage } from 'kafkajs';
import type { RawRecord } from '../model/message.js';

/** Offsets [from, to) of one partition. */
export interface PartitionRange {
  readonly partition: number;
  readonly from: bigint;
  readonly to: bigint;
}

export interface TopicRanges {
  readonly topic: string;
  readonly partitions: readonly PartitionRange[];
}

/** A record as the tools see it: the worker's RawRecord plus what Kafka knows about it. */
export interface FetchedRecord extends RawRecord {
  readonly headers: Readonly<Record<string, Buffer | string | undefined>>;
  /** Kafka timestamp, ms since the epoch. */
  readonly timestamp: number;
}

export interface ReadProgress {
  readonly records: number;
  /** Per "topic/partition": how far through its range, 0..1. */
  readonly partitions: ReadonlyMap<
    string,
    { readonly position: bigint; readonly from: bigint; readonly to: bigint }
  >;
}

export interface ReadOptions {
  /** Called after every batch. */
  readonly onProgress?: (p: ReadProgress) => void;
  /** Fail when no partition moved for this long (a partition that cannot be read). */
  readonly stallMs?: number;
  readonly maxBytesPerPartition?: number;
  /** Prefix of the throw-away consumer group (deleted afterwards). */
  readonly groupPrefix?: string;
}

/** Per partition of each topic: log start and end. The end is read_committed (the last stable offset). */
export async function topicOffsets(
  admin: Admin,
  topic: string,
): Promise<{ partition: number; low: bigint; high: bigint }[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets
    .map((o) => ({ partition: o.partition, low: BigInt(o.low), high: BigInt(o.high) }))
    .sort((a, b) => a.partition - b.partition);
}

const flatHeaders = (h: IHeaders | undefined): Record<string, Buffer | string | undefined> => {
  // A null-prototype object: header names come from outside (`__proto__` is just a name).
  const out: Record<string, Buffer | string | undefined> = Object.create(null);
  if (h === undefined) return out;
  for (const name of Object.keys(h)) {
    const v = h[name];
    out[name] = Array.isArray(v) ? v[v.length - 1] : v;
  }
  return out;
};

/**
 * Reads the given offset ranges of the given topics, read_committed, in offset order per
 * partition, and hands each fetched batch to `handle` (awaited: a slow handler slows the read).
 * Uses a throw-away consumer group that commits nothing and is deleted afterwards.
 *
 * read_committed relies on kafkajs's aborted-transaction filter, which the project patches
 * (patches/kafkajs+2.2.4.patch; src/kafkajs-patch checks it before any client is built).
 * The position of a partition moves past aborted records and transaction markers too, so a
 * range that ends with them completes.
 */
export async function readTopics(
  kafka: Kafka,
  ranges: readonly TopicRanges[],
  handle: (records: FetchedRecord[]) => void | Promise<void>,
  {
    onProgress,
    stallMs = 120_000,
    maxBytesPerPartition = 1024 * 1024,
    groupPrefix = 'rxingest-tools',
  }: ReadOptions = {},
): Promise<void> {
  const state = new Map<
    string,
    { position: bigint; delivered: bigint; from: bigint; to: bigint; done: boolean }
  >();
  for (const t of ranges) {
    for (const p of t.partitions) {
      state.set(`${t.topic}/${p.partition}`, {
        position: p.from,
        delivered: p.from - 1n,
        from: p.from,
        to: p.to,
        done: p.from >= p.to,
      });
    }
  }
  let remaining = [...state.values()].filter((s) => !s.done).length;
  if (remaining === 0) return;

  const groupId = `${groupPrefix}-${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    readUncommitted: false,
    maxBytesPerPartition,
    maxBytes: 16 * 1024 * 1024,
    maxWaitTimeInMs: 200,
    allowAutoTopicCreation: false,
  });
  const topics = ranges.map((r) => r.topic);
  let records = 0;
  let lastMove = Date.now();
  let timer: NodeJS.Timeout | undefined;

  try {
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const finishIfDone = () => {
        if (remaining === 0) resolve();
      };
      const pauseDone = (topic: string, partition: number) =>
        consumer.pause([{ topic, partitions: [partition] }]);
      const advance = (topic: string, partition: number, lastOffset: bigint) => {
        const s = state.get(`${topic}/${partition}`);
        if (s === undefined || s.done) return;
        if (lastOffset + 1n > s.position) {
          s.position = lastOffset + 1n;
          lastMove = Date.now();
        }
        if (s.position >= s.to) {
          s.done = true;
          remaining--;
          pauseDone(topic, partition);
        }
      };
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        // Partitions outside the ranges (or already complete) are not fetched at all.
        for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
          const idle = partitions.filter((p) => state.get(`${topic}/${p}`)?.done !== false);
          if (idle.length > 0) consumer.pause([{ topic, partitions: idle }]);
        }
      });
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        advance(payload.topic, payload.partition, BigInt(payload.lastOffset));
        onProgress?.({ records, partitions: state });
        finishIfDone();
      });
      consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
      timer = setInterval(() => {
        if (Date.now() - lastMove > stallMs) {
          const stuck = [...state.entries()]
            .filter(([, s]) => !s.done)
            .map(([k, s]) => `${k} at ${s.position} of ${s.to}`);
          reject(new Error(`reading stalled for ${stallMs} ms: ${stuck.join(', ')}`));
        }
      }, 1_000);
      timer.unref();

      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const s = state.get(`${batch.topic}/${batch.partition}`);
            if (s === undefined || s.done) return;
            const out: FetchedRecord[] = [];
            for (const m of batch.messages as KafkaMessage[]) {
              const offset = BigInt(m.offset);
              // A batch fetched before a seek applied may start earlier: each offset once, in order.
              if (offset <= s.delivered || offset < s.from || offset >= s.to) continue;
              s.delivered = offset;
              out.push({
                topic: batch.topic,
                partition: batch.partition,
                offset: m.offset,
                key: m.key ?? null,
                value: m.value ?? null,
                headers: flatHeaders(m.headers),
                timestamp: Number(m.timestamp),
              });
            }
            records += out.length;
            if (out.length > 0) await handle(out);
          },
        })
        .then(() => {
          for (const t of ranges) {
            for (const p of t.partitions) {
              if (p.from > 0n && p.from < p.to) {
                consumer.seek({ topic: t.topic, partition: p.partition, offset: String(p.from) });
              }
            }
          }
        }, reject);
    });
  } finally {
    if (timer) clearInterval(timer);
    await consumer.disconnect().catch(() => undefined);
    const admin = kafka.admin();
    await admin
      .connect()
      .then(() => admin.deleteGroups([groupId]))
      .catch(() => undefined)
      .finally(() => admin.disconnect().catch(() => undefined));
  }
}

/** Whole topics, read_committed, from their log start to their end now. */
export async function wholeTopics(admin: Admin, topics: readonly string[]): Promise<TopicRanges[]> {
  return Promise.all(
    topics.map(async (topic) => ({
      topic,
      partitions: (await topicOffsets(admin, topic)).map((o) => ({
        partition: o.partition,
        from: o.low,
        to: o.high,
      })),
    })),
  );
}
