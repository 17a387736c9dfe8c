/** A paced producer with several sends in flight: fast enough for a burst well above what one send at a time reaches. */
import type { Kafka, Message } from 'kafkajs';
import type { WorkloadRecord } from '../../src/generator/workload.js';
import { sleep } from './stack.js';

export interface PacedResult {
  readonly sent: number;
  readonly ms: number;
  readonly rate: number;
  /** How far behind the plan the producer fell, at worst (ms). */
  readonly maxLagMs: number;
  /** Cumulative records acknowledged, over time (ms since start). */
  readonly series: { t: number; sent: number }[];
}

export async function producePaced(
  kafka: Kafka,
  topic: string,
  records: Iterable<WorkloadRecord>,
  {
    tickMs = 20,
    chunk = 1000,
    inFlight = 4,
    stopAtMs = Number.POSITIVE_INFINITY,
  }: {
    tickMs?: number;
    chunk?: number;
    inFlight?: number;
    /** Sends nothing planned after this (ms since start) and stops sending at this time: a burst that lasts what it should. */
    stopAtMs?: number;
  } = {},
): Promise<PacedResult> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const it = records[Symbol.iterator]();
  let next = it.next();
  let sent = 0;
  let maxLagMs = 0;
  const series: { t: number; sent: number }[] = [];
  const pending = new Set<Promise<unknown>>();
  const t0 = performance.now();
  try {
    while (!next.done) {
      const now = performance.now() - t0;
      if (now >= stopAtMs || next.value.sendAtMs >= stopAtMs) break;
      if (next.value.sendAtMs > now) {
        await sleep(Math.min(tickMs, next.value.sendAtMs - now));
        continue;
      }
      maxLagMs = Math.max(maxLagMs, now - next.value.sendAtMs);
      let batch: Message[] = [];
      while (!next.done && next.value.sendAtMs <= now && performance.now() - t0 < stopAtMs) {
        batch.push({ key: next.value.key, value: next.value.value });
        next = it.next();
        if (batch.length >= chunk || next.done || next.value.sendAtMs > now) {
          const n = batch.length;
          const p = producer.send({ topic, acks: -1, messages: batch }).then(() => {
            sent += n;
            series.push({ t: performance.now() - t0, sent });
          });
          pending.add(p);
          p.finally(() => pending.delete(p)).catch(() => undefined);
          batch = [];
          if (pending.size >= inFlight) await Promise.race(pending);
        }
      }
    }
    await Promise.all(pending);
  } finally {
    await producer.disconnect();
  }
  const ms = performance.now() - t0;
  return { sent, ms, rate: (sent * 1000) / ms, maxLagMs, series };
}
