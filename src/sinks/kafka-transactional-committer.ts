import { setTimeout as sleep } from 'node:timers/promises';
import type { Producer } from 'kafkajs';
import type { Logger } from 'pino';
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
    for (let attempt = 0; ; attempt++) {
      try {
        await this.commitOnce(offset, records);
        return;
      } catch (err) {
        if (isFenced(err)) {
          throw new PartitionLostError(
            `${topic}[${partition}]: producer fenced at offset ${offset}; another worker owns it`,
          );
        }
        if (!isRetriable(err) || this.signal?.aborted) throw err;
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
      if (records.length > 0) {
        const byTopic = new Map<string, OutRecord[]>();
        for (const r of records) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r]);
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

function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  let e: unknown = err;
  while (e && out.length < 10) {
    out.push(e);
    e = (e as { cause?: unknown; originalError?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return out;
}

export function isFenced(err: unknown): boolean {
  return causes(err).some((e) => {
    const x = e as { type?: string; code?: number };
    return (x.type !== undefined && FENCED.has(x.type)) || x.code === 90;
  });
}

function isRetriable(err: unknown): boolean {
  return causes(err).some((e) => {
    const x = e as { retriable?: boolean; name?: string };
    return (
      x.retriable === true ||
      x.name === 'KafkaJSNumberOfRetriesExceeded' ||
      x.name === 'KafkaJSConnectionError' ||
      x.name === 'KafkaJSRequestTimeoutError'
    );
  });
}
