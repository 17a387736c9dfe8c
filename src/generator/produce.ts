import type { Message, Producer } from 'kafkajs';
import { isTooLarge } from '../model/failures.js';
import type { RecordKind, WorkloadRecord } from './workload.js';

export type KindCounts = Record<RecordKind, number>;

export interface RunProducerOptions {
  readonly topic: string;
  /** The plan, sorted by sendAtMs (an array from planWorkload or the lazy workloadRecords). */
  readonly records: Iterable<WorkloadRecord>;
  /** Stops before the next send; what was sent is reported with `aborted: true`. */
  readonly signal?: AbortSignal;
  /** Pacing tick: each tick sends what is due. Default 20 ms. */
  readonly tickMs?: number;
  /** Most key+value bytes per send() call; a bigger record goes alone. Default 256 KiB. */
  readonly maxBatchBytes?: number;
  /** Most records per send() call. Default 500. */
  readonly maxBatchRecords?: number;
  /** Broker-side timeout of each send (ms). Default 30 000. */
  readonly sendTimeoutMs?: number;
  /** How often onProgress is called (ms). Default 1000. */
  readonly progressIntervalMs?: number;
}

export interface ProduceProgress {
  readonly sent: Readonly<KindCounts>;
  readonly total: number;
  readonly rejected: number;
  readonly elapsedMs: number;
  /** Records sent per second so far. */
  readonly ratePerSec: number;
  /** How far behind the plan the last sent batch was (ms). */
  readonly lagMs: number;
}

export interface ProduceResult extends ProduceProgress {
  /** True when the signal stopped the run before the plan was done. */
  readonly aborted: boolean;
  /** The worst lag behind the plan seen during the run (ms). */
  readonly maxLagMs: number;
}

export interface ProducerDeps {
  /** A connected kafkajs producer (the caller owns connect/disconnect). */
  readonly producer: Pick<Producer, 'send'>;
  readonly onProgress?: (progress: ProduceProgress) => void;
  /** Called after each successful send() with exactly the records it carried. */
  readonly onSent?: (records: readonly WorkloadRecord[]) => void;
  /** Called when the broker refuses a record as too large; the run goes on. */
  readonly onRejected?: (record: WorkloadRecord, error: Error) => void;
  /** Time source; defaults to performance.now and setTimeout. */
  readonly clock?: {
    now(): number;
    sleep(ms: number, signal?: AbortSignal): Promise<void>;
  };
}

/** A send failed for a reason other than a too-large record; `result` says what was sent before. */
export class ProduceError extends Error {
  constructor(
    message: string,
    readonly result: ProduceResult,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProduceError';
  }
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

const defaultClock = { now: () => performance.now(), sleep };

const size = (r: WorkloadRecord): number => (r.value?.length ?? 0) + (r.key?.length ?? 0);

/**
 * Splits due records into send() calls bounded by bytes and count. Records over the byte bound
 * and oversize poison go alone, so a broker refusing one refuses nothing else.
 */
function* chunks(records: readonly WorkloadRecord[], maxBytes: number, maxRecords: number) {
  let chunk: WorkloadRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const s = size(r);
    const alone = s > maxBytes || r.poisonKind === 'oversize';
    if (chunk.length > 0 && (alone || bytes + s > maxBytes || chunk.length >= maxRecords)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(r);
    bytes += s;
    if (alone) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
  }
  if (chunk.length > 0) yield chunk;
}

const toMessage = (r: WorkloadRecord): Message => ({ key: r.key, value: r.value });

/**
 * Sends a plan to Kafka at its planned times: every tick it sends, in order, what is due
 * (acks = -1, in chunks, one send at a time so per-key order holds). Falls behind gracefully:
 * when sends are slow, the next tick sends everything that has become due.
 */
export async function runProducer(opts: RunProducerOptions, deps: ProducerDeps): Promise<ProduceResult> {
  const tickMs = opts.tickMs ?? 20;
  const maxBatchBytes = opts.maxBatchBytes ?? 256 * 1024;
  const maxBatchRecords = opts.maxBatchRecords ?? 500;
  const sendTimeoutMs = opts.sendTimeoutMs ?? 30_000;
  const progressIntervalMs = opts.progressIntervalMs ?? 1000;
  const clock = deps.clock ?? defaultClock;
  const { signal } = opts;

  const sent: KindCounts = { profile: 0, event: 0, duplicate: 0, poison: 0 };
  let total = 0;
  let rejected = 0;
  let lagMs = 0;
  let maxLagMs = 0;
  let aborted = false;
  const start = clock.now();
  let lastDoneAt = start;
  let nextProgressAt = start + progressIntervalMs;

  const snapshot = (): ProduceResult => {
    const elapsedMs = Math.max(0, lastDoneAt - start);
    return {
      sent: { ...sent },
      total,
      rejected,
      elapsedMs,
      ratePerSec: elapsedMs > 0 ? (total * 1000) / elapsedMs : 0,
      lagMs,
      aborted,
      maxLagMs,
    };
  };

  const iterator = opts.records[Symbol.iterator]();
  let next = iterator.next();
  let previousAt = Number.NEGATIVE_INFINITY;

  while (!next.done) {
    if (signal?.aborted) {
      aborted = true;
      break;
    }
    const tickStart = clock.now();
    const elapsed = tickStart - start;
    if (next.value.sendAtMs > elapsed) {
      await clock.sleep(next.value.sendAtMs - elapsed, signal);
      continue;
    }

    const due: WorkloadRecord[] = [];
    while (!next.done && next.value.sendAtMs <= elapsed && due.length < maxBatchRecords * 20) {
      if (next.value.sendAtMs < previousAt) {
        throw new RangeError(
          `records must be sorted by sendAtMs (${next.value.sendAtMs} after ${previousAt})`,
        );
      }
      previousAt = next.value.sendAtMs;
      due.push(next.value);
      next = iterator.next();
    }
    lagMs = Math.max(0, elapsed - (due[0]?.sendAtMs ?? elapsed));
    maxLagMs = Math.max(maxLagMs, lagMs);

    for (const chunk of chunks(due, maxBatchBytes, maxBatchRecords)) {
      if (signal?.aborted) {
        aborted = true;
        break;
      }
      try {
        await deps.producer.send({
          topic: opts.topic,
          acks: -1,
          timeout: sendTimeoutMs,
          messages: chunk.map(toMessage),
        });
      } catch (err) {
        const only = chunk.length === 1 ? chunk[0] : undefined;
        if (only && isTooLarge(err)) {
          rejected++;
          deps.onRejected?.(only, err as Error);
          continue;
        }
        lastDoneAt = clock.now();
        const reason = err instanceof Error ? err.message : String(err);
        throw new ProduceError(`sending to ${opts.topic} failed: ${reason}`, snapshot(), { cause: err });
      }
      for (const r of chunk) sent[r.kind]++;
      total += chunk.length;
      lastDoneAt = clock.now();
      deps.onSent?.(chunk);
      if (deps.onProgress && lastDoneAt >= nextProgressAt) {
        nextProgressAt = lastDoneAt + progressIntervalMs;
        deps.onProgress(snapshot());
      }
    }
    if (aborted) break;

    // Let a tick's worth of records accumulate, unless the plan is already late.
    if (!next.done) {
      const now = clock.now();
      const wait = Math.max(tickStart + tickMs - now, next.value.sendAtMs - (now - start));
      if (wait > 0) await clock.sleep(wait, signal);
    }
  }
  if (!aborted && signal?.aborted && !next.done) aborted = true;
  return snapshot();
}
