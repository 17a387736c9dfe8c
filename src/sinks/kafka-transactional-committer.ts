import { setTimeout as sleep } from 'node:timers/promises';
import type { Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { causes, classifyError } from '../model/failures.js';
import { backoffDelay } from '../operators/backoff.js';
import type { CommitSink, OutRecord } from './ports.js';

/** Another worker now owns this partition: its producer fenced ours. Not a failure of the worker. */
export class PartitionLostError extends Error {
  override name = 'PartitionLostError';
}

export interface TransactionalCommitterOptions {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
}

const FENCED = new Set([
  'INVALID_PRODUCER_EPOCH',
  'PRODUCER_FENCED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
]);

/**
 * Publishes a partition's trigger and dead-letter records and commits its offset
 * in one Kafka transaction, so that a record's side effects become visible
 * exactly when its offset is committed: never twice after a crash, never lost.
 *
 * One producer per input partition, with transactional id
 * `<group>-<topic>-<partition>`: when the partition moves, the new owner's
 * producer bumps the epoch (kafkajs does so when its first transaction begins,
 * not on connect) and this one's next commit fails as fenced (kafkajs's
 * TxnOffsetCommit has no generation fencing of its own).
 */
export class TransactionalCommitter implements CommitSink {
  constructor(
    private readonly producer: Producer,
    private readonly options: TransactionalCommitterOptions,
    private readonly log: Logger,
    private readonly signal?: AbortSignal,
  ) {}

  static transactionalId(groupId: string, topic: string, partition: number): string {
    return `${groupId}-${topic}-${partition}`;
  }

  async commit(offset: string, records: readonly OutRecord[]): Promise<void> {
    const { topic, partition } = this.options;
    let toSend = records;
    let truncateAbove = Infinity;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.commitOnce(offset, toSend);
        return;
      } catch (err) {
        if (isTooLarge(err) && truncateAbove > TRUNCATED_BYTES) {
          // A dead letter bigger than its topic accepts must not stop the partition forever:
          // send large values truncated, saying so (halving the bar until the topic takes
          // them), and retry at once. The x-source-* headers still lead to the original.
          truncateAbove = truncateAbove === Infinity ? DEFAULT_TOPIC_LIMIT : truncateAbove / 2;
          this.log.warn(
            { topic, partition, offset, truncateAbove },
            'a record was too large for its topic; truncating',
          );
          toSend = records.map((r) => truncateLarge(r, truncateAbove));
          attempt--;
          continue;
        }
        if (isFenced(err)) {
          throw new PartitionLostError(
            `${topic}[${partition}]: producer fenced at offset ${offset}; another worker owns it`,
          );
        }
        if (classifyError(err) !== 'transient' || this.signal?.aborted) throw err;
        const ms = backoffDelay(attempt, {
          baseMs: this.options.retryBaseMs,
          maxMs: this.options.retryMaxMs,
          random: Math.random,
        });
        this.log.warn(
          { topic, partition, offset, attempt, delayMs: Math.round(ms), err: String(err) },
          'offset commit failed; retrying',
        );
        await sleep(ms);
      }
    }
  }

  private async commitOnce(offset: string, records: readonly OutRecord[]): Promise<void> {
    const tx = await this.producer.transaction();
    try {
      // kafkajs puts one partition's records of a request into one record batch, which the
      // broker measures against max.message.bytes: keep each request's records small.
      for (const chunk of chunksOf(records, CHUNK_BYTES)) {
        const byTopic = new Map<string, OutRecord[]>();
        for (const r of chunk) {
          const rs = byTopic.get(r.topic);
          if (rs === undefined) byTopic.set(r.topic, [r]);
          else rs.push(r);
        }
        await tx.sendBatch({
          acks: -1,
          topicMessages: [...byTopic].map(([t, rs]) => ({
            topic: t,
            messages: rs.map((r) => ({ key: r.key, value: r.value, headers: r.headers })),
          })),
        });
      }
      await tx.sendOffsets({
        consumerGroupId: this.options.groupId,
        topics: [{ topic: this.options.topic, partitions: [{ partition: this.options.partition, offset }] }],
      });
      await tx.commit();
    } catch (err) {
      await tx.abort().catch(() => undefined);
      throw err;
    }
  }
}

/** Records per produce request add up to at most this (a larger record goes alone). */
const CHUNK_BYTES = 512 * 1024;
/** What a truncated value keeps. */
const TRUNCATED_BYTES = 64 * 1024;
/** Kafka's default max.message.bytes (1048588) less room for the batch and record overhead. */
const DEFAULT_TOPIC_LIMIT = 1_000_000;

const sizeOf = (r: OutRecord) =>
  (r.key?.length ?? 0) +
  (r.value?.length ?? 0) +
  Object.entries(r.headers ?? {}).reduce((a, [k, v]) => a + k.length + v.length, 0);

function* chunksOf(records: readonly OutRecord[], maxBytes: number): Generator<OutRecord[]> {
  let chunk: OutRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = sizeOf(r);
    if (chunk.length > 0 && bytes + size > maxBytes) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(r);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}

function truncateLarge(r: OutRecord, above: number): OutRecord {
  if (r.value === null || sizeOf(r) <= above) return r;
  const value = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
  return {
    ...r,
    value: value.subarray(0, TRUNCATED_BYTES),
    headers: { ...r.headers, 'x-value-truncated': `${value.length} bytes, first ${TRUNCATED_BYTES} kept` },
  };
}

function isTooLarge(err: unknown): boolean {
  return causes(err).some((e) => {
    const t = (e as { type?: string }).type;
    return t === 'MESSAGE_TOO_LARGE' || t === 'RECORD_LIST_TOO_LARGE';
  });
}

export function isFenced(err: unknown): boolean {
  return causes(err).some((e) => {
    const x = e as { type?: string; code?: number };
    return (x.type !== undefined && FENCED.has(x.type)) || x.code === 90;
  });
}
