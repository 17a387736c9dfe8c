/**
 * End-to-end latency, produce to indexed: a paced producer sends a workload to Kafka, and a
 * poller watches for a sample of the event ids to get their owner mark in Redis. The worker
 * sets it (rememberOwners) right after Elasticsearch acknowledged the bulk that created the
 * event, so the mark is "indexed" plus one Redis round trip. Profiles get no mark (their
 * merge needs no owner), so only events are sampled.
 *
 * Why not ask Elasticsearch? A real-time GET of a document that is not yet searchable makes the
 * shard refresh, so polling Elasticsearch every few ms would change what is being measured;
 * polling with `realtime: false` would only see documents after the 1 s refresh interval.
 */
import type { Redis } from 'ioredis';
import type { Kafka } from 'kafkajs';
import { runProducer } from '../../src/generator/produce.js';
import { planWorkload } from '../../src/generator/workload.js';
import { markGeneration, marksKey } from '../../src/sinks/redis/known-copies.js';
import { sleep } from './stack.js';

export interface LatencyOptions {
  readonly kafka: Kafka;
  readonly redis: Redis;
  readonly topic: string;
  /** Where the worker's owner marks live: its REDIS_KEY_PREFIX, INGEST_GROUP and PROCESSED_TTL_MS. */
  readonly marks: { readonly keyPrefix: string; readonly group: string; readonly ttlMs: number };
  readonly ratePerSec: number;
  readonly durationMs: number;
  readonly seed: number;
  readonly clients: number;
  /** Poll every this many ms. */
  readonly pollMs?: number;
  /** One message in this many is sampled. */
  readonly sampleEvery?: number;
  /** After the last send, how long to wait for the stragglers. */
  readonly settleMs?: number;
  /**
   * The messages' `ts` count from this far in the future of when planning starts, and sending
   * starts then: a message's `ts` is its planned send time, so the worker's own ts → indexed
   * histogram measures what this bench does. Planning 375,000 messages takes about 2 s.
   */
  readonly startInMs?: number;
}

export interface LatencyResult {
  /** ms from the planned send time to the poll that found the document. */
  readonly latencies: number[];
  /** Send time (ms into the run) of each measured sample, same order as `latencies`. */
  readonly sentAt: number[];
  /** ms from the producer's acknowledgement to the poll that found it, same order: Kafka, the worker and Elasticsearch. */
  readonly afterAck: number[];
  readonly sampled: number;
  readonly missing: number;
  readonly produced: number;
  readonly producedRate: number;
  readonly producerMaxLagMs: number;
  readonly pollMs: number;
  /** performance.now() of the run's time 0, which `sentAt` counts from. */
  readonly startedAt: number;
  /** How much later than the messages' `ts` base sending started (0 unless planning overran `startInMs`). */
  readonly startLateMs: number;
}

export async function measureLatency(o: LatencyOptions): Promise<LatencyResult> {
  const pollMs = o.pollMs ?? 20;
  const sampleEvery = o.sampleEvery ?? Math.max(1, Math.round(o.ratePerSec / 200));
  const startAtWall = Date.now() + (o.startInMs ?? 3_000);
  const plan = planWorkload({
    seed: o.seed,
    ratePerSec: o.ratePerSec,
    durationMs: o.durationMs,
    clients: o.clients,
    duplicateShare: 0.01,
    poisonShare: 0,
    baseTimeMs: startAtWall,
  });
  const sampledAt = new Map<string, number>();
  let originals = 0;
  for (const r of plan) {
    if (r.kind === 'event' && originals++ % sampleEvery === 0) {
      sampledAt.set(r.id!, r.sendAtMs);
    }
  }
  /** Sampled ids sent and acknowledged, not yet found: planned send time, ack time (ms into the run). */
  const outstanding = new Map<string, { at: number; ackAt: number }>();
  const latencies: number[] = [];
  const sentAt: number[] = [];
  const afterAck: number[] = [];
  let t0: number | undefined;
  let producing = true;

  const poller = (async () => {
    let settleUntil = Number.POSITIVE_INFINITY;
    for (;;) {
      if (!producing && settleUntil === Number.POSITIVE_INFINITY)
        settleUntil = performance.now() + (o.settleMs ?? 30_000);
      if (!producing && (outstanding.size === 0 || performance.now() > settleUntil)) return;
      if (outstanding.size > 0 && t0 !== undefined) {
        const ids = [...outstanding.keys()].slice(0, 2_000);
        try {
          // The worker's marks: this generation's hash or the one before (see RedisKnownCopies).
          const { keyPrefix, group, ttlMs } = o.marks;
          const generation = markGeneration(Date.now(), ttlMs);
          const [current, previous] = await Promise.all(
            [generation, generation - 1].map((g) => o.redis.hmget(marksKey(keyPrefix, group, g), ...ids)),
          );
          const marks = current!.map((m, i) => m ?? previous![i] ?? null);
          const now = performance.now();
          marks.forEach((mark, i) => {
            if (mark === null) return;
            const id = ids[i]!;
            const { at, ackAt } = outstanding.get(id)!;
            outstanding.delete(id);
            latencies.push(now - (t0! + at));
            sentAt.push(at);
            afterAck.push(now - (t0! + ackAt));
          });
        } catch {
          // A slow answer: try again.
        }
      }
      await sleep(pollMs);
    }
  })();

  const producer = o.kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  // Late only if planning and connecting overran the head start (a timer's own lateness is not).
  const headStartLeft = startAtWall - Date.now();
  if (headStartLeft > 0) await sleep(headStartLeft);
  const startLateMs = Math.max(0, -headStartLeft);
  const result = await runProducer(
    { topic: o.topic, records: plan, tickMs: 5, maxBatchRecords: 500 },
    {
      producer,
      clock: {
        now: () => {
          const now = performance.now();
          t0 ??= now;
          return now;
        },
        sleep: (ms) => sleep(ms),
      },
      onSent: (records) => {
        const ackAt = performance.now() - t0!;
        for (const r of records) {
          if (r.kind !== 'event') continue;
          const at = sampledAt.get(r.id!);
          if (at !== undefined) outstanding.set(r.id!, { at, ackAt });
        }
      },
    },
  ).finally(() => {
    producing = false;
  });
  await producer.disconnect();
  await poller;
  return {
    latencies,
    sentAt,
    afterAck,
    sampled: sampledAt.size,
    missing: sampledAt.size - latencies.length,
    produced: result.total,
    producedRate: result.ratePerSec,
    producerMaxLagMs: result.maxLagMs,
    pollMs,
    startedAt: t0 ?? Number.NaN,
    startLateMs,
  };
}
