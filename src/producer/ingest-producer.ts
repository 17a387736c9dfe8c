import type { CompressionTypes, Message, Producer, ProducerRecord, RecordMetadata } from 'kafkajs';
import type { ProducerControl } from './redis-control-source.js';
import { TokenBucket } from './token-bucket.js';

/** Time for the producer; its timers keep the process alive while messages wait to be sent. */
export interface ProducerClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: ProducerClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

export interface IngestProducerOptions {
  /** Published limits and hot clients (RedisControlSource); none: never throttled. */
  readonly control?: ProducerControl;
  /** Most records waiting to be sent, over all topics. Default 10 000. */
  readonly maxBufferedRecords?: number;
  /** Most key + value bytes waiting to be sent. Default 16 MiB. */
  readonly maxBufferedBytes?: number;
  /**
   * What send() does when the buffer is full: `block` (default) waits for room, so the
   * caller slows down too; `reject` throws a BufferFullError at once and takes nothing.
   * A single send larger than the whole buffer is taken when the buffer is empty.
   */
  readonly whenFull?: 'block' | 'reject';
  /** Most records per Kafka request. Default 500. */
  readonly maxBatchRecords?: number;
  /** The token bucket saves up at most this many seconds of the limit. Default 0.1. */
  readonly burstSeconds?: number;
  /** Told when a topic's limit for this producer changes (undefined: lifted). */
  readonly onLimit?: (topic: string, ratePerSec: number | undefined) => void;
  readonly clock?: ProducerClock;
}

/** send() with `whenFull: 'reject'` and no room: nothing of the record was taken. */
export class BufferFullError extends Error {
  override name = 'BufferFullError';
  constructor(
    readonly topic: string,
    readonly records: number,
    readonly buffered: { records: number; bytes: number },
  ) {
    super(
      `producer buffer full: ${buffered.records} records (${buffered.bytes} bytes) wait to be sent; ` +
        `${records} more for ${topic} refused`,
    );
  }
}

export interface IngestProducerStats {
  /** Records and bytes waiting in the buffer now. */
  readonly buffered: { readonly records: number; readonly bytes: number };
  /** The most records that ever waited at once. */
  readonly maxBufferedRecords: number;
  /** Records sent (acknowledged by Kafka). */
  readonly sent: number;
  /** Sends refused with BufferFullError, and how long send() calls waited for room in total (ms). */
  readonly refused: number;
  readonly blockedMs: number;
  /** Time the topics' pumps waited for tokens (ms, summed over topics). */
  readonly throttledMs: number;
  /** This producer's current limit per topic (msg/s), where there is one. */
  readonly limits: Readonly<Record<string, number>>;
}

interface Pending {
  readonly record: ProducerRecord;
  readonly bytes: number;
  next: number;
  readonly results: RecordMetadata[];
  readonly resolve: (r: RecordMetadata[]) => void;
  readonly reject: (e: unknown) => void;
}

interface TopicPump {
  readonly queue: Pending[];
  readonly bucket: TokenBucket;
  running: boolean;
}

const messageBytes = (m: Message) =>
  (m.value === null || m.value === undefined ? 0 : Buffer.byteLength(m.value)) +
  (m.key === null || m.key === undefined ? 0 : Buffer.byteLength(m.key));

const sameOptions = (a: ProducerRecord, b: ProducerRecord) =>
  a.acks === b.acks && a.timeout === b.timeout && a.compression === b.compression;

/**
 * rxingest's producer library: a kafkajs producer that honours the rate limit the workers
 * publish for a topic when its consumer group falls behind (tier 2), sends no faster than
 * that (token bucket per topic), and keeps what it cannot send yet in a bounded local
 * buffer: `send()` blocks, or refuses with BufferFullError, when the buffer is full;
 * nothing is dropped. Each topic's messages go out in the order they were given, one
 * request at a time. `send()` resolves when Kafka acknowledged every message of the call.
 *
 * It has kafkajs's `send(record)` shape, so it can stand in for a kafkajs producer; create
 * the kafkajs producer with `hotClientPartitioner` to spread hot clients (see
 * `createIngestProducer`).
 */
export class IngestProducer {
  private readonly clock: ProducerClock;
  private readonly pumps = new Map<string, TopicPump>();
  private readonly waiting: { n: number; bytes: number; resolve: () => void }[] = [];
  private readonly unsettled = new Set<Promise<unknown>>();
  private bufferedRecords = 0;
  private bufferedBytes = 0;
  private counters = { maxBuffered: 0, sent: 0, refused: 0, blockedMs: 0, throttledMs: 0 };
  private readonly limits = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly producer: Pick<Producer, 'send'>,
    private readonly o: IngestProducerOptions = {},
  ) {
    this.clock = o.clock ?? realClock;
  }

  stats(): IngestProducerStats {
    return {
      buffered: { records: this.bufferedRecords, bytes: this.bufferedBytes },
      maxBufferedRecords: this.counters.maxBuffered,
      sent: this.counters.sent,
      refused: this.counters.refused,
      blockedMs: this.counters.blockedMs,
      throttledMs: this.counters.throttledMs,
      limits: Object.fromEntries(this.limits),
    };
  }

  async send(record: ProducerRecord): Promise<RecordMetadata[]> {
    if (this.closed) throw new Error('producer closed');
    const n = record.messages.length;
    if (n === 0) return [];
    const bytes = record.messages.reduce((a, m) => a + messageBytes(m), 0);
    const done = this.enqueue(record, n, bytes);
    this.unsettled.add(done);
    const forget = () => this.unsettled.delete(done);
    done.then(forget, forget);
    return done;
  }

  /** Resolves once everything given to send() so far has been sent (or has failed). */
  async flush(): Promise<void> {
    while (this.unsettled.size > 0) await Promise.allSettled([...this.unsettled]);
  }

  /** Refuses new sends, then waits for the buffer to empty. The kafkajs producer stays the caller's. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private async enqueue(record: ProducerRecord, n: number, bytes: number): Promise<RecordMetadata[]> {
    await this.reserve(record.topic, n, bytes);
    this.o.control?.watch(record.topic);
    const pump = this.pump(record.topic);
    const done = new Promise<RecordMetadata[]>((resolve, reject) =>
      pump.queue.push({ record, bytes, next: 0, results: [], resolve, reject }),
    );
    if (!pump.running) void this.run(record.topic, pump);
    return done;
  }

  private fits(n: number, bytes: number): boolean {
    const maxRecords = this.o.maxBufferedRecords ?? 10_000;
    const maxBytes = this.o.maxBufferedBytes ?? 16 * 1024 * 1024;
    return (
      this.bufferedRecords === 0 ||
      (this.bufferedRecords + n <= maxRecords && this.bufferedBytes + bytes <= maxBytes)
    );
  }

  /** Takes room in the buffer for a call, waiting (first come, first served) or refusing when there is none. */
  private async reserve(topic: string, n: number, bytes: number): Promise<void> {
    if (this.waiting.length === 0 && this.fits(n, bytes)) {
      this.take(n, bytes);
      return;
    }
    if ((this.o.whenFull ?? 'block') === 'reject') {
      this.counters.refused++;
      throw new BufferFullError(topic, n, { records: this.bufferedRecords, bytes: this.bufferedBytes });
    }
    const since = this.clock.now();
    await new Promise<void>((resolve) => this.waiting.push({ n, bytes, resolve }));
    this.counters.blockedMs += this.clock.now() - since;
  }

  private take(n: number, bytes: number): void {
    this.bufferedRecords += n;
    this.bufferedBytes += bytes;
    this.counters.maxBuffered = Math.max(this.counters.maxBuffered, this.bufferedRecords);
  }

  private release(n: number, bytes: number): void {
    this.bufferedRecords -= n;
    this.bufferedBytes -= bytes;
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.n, this.waiting[0]!.bytes)) {
      const w = this.waiting.shift()!;
      this.take(w.n, w.bytes);
      w.resolve();
    }
  }

  private pump(topic: string): TopicPump {
    let p = this.pumps.get(topic);
    if (!p) {
      p = {
        queue: [],
        bucket: new TokenBucket(() => this.clock.now(), undefined, this.o.burstSeconds),
        running: false,
      };
      this.pumps.set(topic, p);
    }
    return p;
  }

  private updateLimit(topic: string, pump: TopicPump): void {
    const limit = this.o.control?.limitFor(topic);
    if (limit === pump.bucket.ratePerSec) return;
    pump.bucket.setRate(limit);
    if (limit === undefined) this.limits.delete(topic);
    else this.limits.set(topic, limit);
    this.o.onLimit?.(topic, limit);
  }

  private async run(topic: string, pump: TopicPump): Promise<void> {
    pump.running = true;
    const maxBatch = this.o.maxBatchRecords ?? 500;
    try {
      while (pump.queue.length > 0) {
        this.updateLimit(topic, pump);
        const head = pump.queue[0]!;
        // Consecutive calls with the same options share a request.
        let want = 0;
        for (const e of pump.queue) {
          if (!sameOptions(e.record, head.record) || want >= maxBatch) break;
          want += Math.min(maxBatch - want, e.record.messages.length - e.next);
        }
        const n = pump.bucket.take(want);
        if (n === 0) {
          const wait = Math.max(1, pump.bucket.waitMs(want));
          this.counters.throttledMs += wait;
          await this.clock.sleep(Math.min(wait, 1_000));
          continue;
        }
        await this.sendSlice(topic, pump, n);
      }
    } finally {
      pump.running = false;
    }
  }

  /** Sends the next `n` messages of the queue in one request and settles the calls they complete. */
  private async sendSlice(topic: string, pump: TopicPump, n: number): Promise<void> {
    const parts: { e: Pending; from: number; to: number }[] = [];
    let left = n;
    for (const e of pump.queue) {
      if (left === 0) break;
      const take = Math.min(left, e.record.messages.length - e.next);
      parts.push({ e, from: e.next, to: e.next + take });
      left -= take;
    }
    const head = parts[0]!.e.record;
    const messages = parts.flatMap(({ e, from, to }) => e.record.messages.slice(from, to));
    try {
      const res = await this.producer.send({
        topic,
        messages,
        ...(head.acks !== undefined ? { acks: head.acks } : {}),
        ...(head.timeout !== undefined ? { timeout: head.timeout } : {}),
        ...(head.compression !== undefined ? { compression: head.compression as CompressionTypes } : {}),
      });
      this.counters.sent += messages.length;
      let bytes = 0;
      for (const { e, from, to } of parts) {
        e.results.push(...res);
        e.next = to;
        bytes += e.record.messages.slice(from, to).reduce((a, m) => a + messageBytes(m), 0);
        if (e.next === e.record.messages.length) {
          pump.queue.shift();
          e.resolve(e.results);
        }
      }
      this.release(messages.length, bytes);
    } catch (err) {
      // The calls this request carried fail whole: what they had left is given back to them
      // (in the error), never silently dropped; later calls go on.
      let records = 0;
      let bytes = 0;
      for (const { e } of parts) {
        pump.queue.splice(pump.queue.indexOf(e), 1);
        const rest = e.record.messages.slice(e.next);
        records += rest.length;
        bytes += rest.reduce((a, m) => a + messageBytes(m), 0);
        e.reject(err);
      }
      this.release(records, bytes);
    }
  }
}
