import type { Admin, Kafka, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { causes, isTooLarge } from '../../model/failures.js';
import { greater } from '../../model/offset-tracker.js';
import type { CommitSink, OutRecord } from '../ports.js';
import {
  fence,
  offsetMetadata,
  type TakeoverOptions,
  type TakeoverRetryReason,
  takeOverPartition,
  transactionalId,
} from './partition-takeover.js';
import { ProgressLedger } from './progress-ledger.js';
import { fitRecords, requestsOf } from './record-limits.js';
import { TopicLimits } from './topic-limits.js';

/** Another worker now owns this partition: its producer fenced ours. Not a failure of the worker. */
export class PartitionLostError extends Error {
  override name = 'PartitionLostError';
}

/**
 * A commit failed and may or may not have happened. It is never retried with the same
 * records: the partition starts again from what Kafka says is committed (after fencing),
 * so a trigger cannot go out in two transactions.
 */
export class CommitFailedError extends Error {
  override name = 'CommitFailedError';
}

export interface TransactionalCommitterOptions extends TakeoverOptions {
  /** PROGRESS_TOPIC: the ledger of the highest offset ever committed. */
  readonly progressTopic: string;
  /**
   * Told of each retry (`rxingest_retries_total{target="kafka",reason}`): a read at the
   * start asked again (`offset-read`, `progress-read`), a commit sent again after the broker
   * refused a record as too large for its topic (`too-large`: the topic's limit was lowered
   * since it was read).
   */
  readonly onRetry?: (reason: KafkaRetryReason) => void;
  /**
   * The output topics' `max.message.bytes`, shared by the worker's partitions and read at
   * its start; without it, the committer reads them itself before its first commit to them.
   */
  readonly limits?: TopicLimits;
}

/** Why the committer tried again: bounded label values. */
export type KafkaRetryReason = TakeoverRetryReason | 'too-large';

/**
 * A refusal as too large that a fresh read of the limits does not explain (a limit not yet
 * visible, an estimate short) halves the limits used for the commit, this many times at most.
 */
const MAX_SQUEEZE = 16;

export interface OpenedPartition {
  readonly committer: TransactionalCommitter;
  /** The committed offset to resume from; undefined when the group never committed this partition. */
  readonly committed: string | undefined;
  /** The highest offset ever committed, when it is beyond `committed` (offsets were reset). */
  readonly replayedBelow: string | undefined;
}

const FENCED = new Set([
  'INVALID_PRODUCER_EPOCH',
  'PRODUCER_FENCED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
]);

/**
 * Publishes a partition's trigger and dead-letter records and commits its offset in one
 * Kafka transaction, so that a record's side effects become visible exactly when its
 * offset is committed: never twice after a crash, never lost. The same transaction
 * records the highest offset ever committed (offset metadata and PROGRESS_TOPIC), which
 * is how a later reset of the group's offsets is told apart from work never committed.
 *
 * One producer per input partition, with the partition's transactional id: when the
 * partition moves, the new owner's takeover (partition-takeover.ts) fences this producer,
 * and its next commit fails as fenced.
 */
export class TransactionalCommitter implements CommitSink {
  private constructor(
    private producer: Producer,
    /** Makes a producer with this partition's transactional id (a new epoch when it begins). */
    private readonly newProducer: () => Producer,
    private readonly admin: Admin,
    private readonly options: TransactionalCommitterOptions,
    private readonly log: Logger,
    private highest: string | undefined,
    private readonly limits: TopicLimits,
  ) {}

  static transactionalId(groupId: string, topic: string, partition: number): string {
    return transactionalId(groupId, topic, partition);
  }

  /** Takes the partition over (takeOverPartition) and gives its committer. */
  static async open(
    kafka: Kafka,
    admin: Admin,
    ledger: ProgressLedger,
    options: TransactionalCommitterOptions,
    log: Logger,
  ): Promise<OpenedPartition> {
    const taken = await takeOverPartition(kafka, admin, ledger, options, log);
    return {
      committer: new TransactionalCommitter(
        taken.producer,
        taken.newProducer,
        admin,
        options,
        log,
        taken.highest,
        options.limits ?? new TopicLimits(admin, log),
      ),
      committed: taken.committed,
      replayedBelow: taken.replayedBelow,
    };
  }

  async commit(offset: string, records: readonly OutRecord[]): Promise<void> {
    const { topic, partition, progressTopic } = this.options;
    const highest = this.highest === undefined || greater(offset, this.highest) ? offset : this.highest;
    const topics = new Set([progressTopic]);
    for (const r of records) topics.add(r.topic);
    if (!this.limits.knowsAll(topics)) await this.limits.ensure(topics);
    let squeeze = 1;
    for (let attempt = 0; ; attempt++) {
      const limitOf = (t: string) => Math.floor(this.limits.limitOf(t) / squeeze);
      const used = new Map([...topics].map((t) => [t, this.limits.limitOf(t)] as const));
      // A record too large for its topic goes truncated, before the transaction begins: one
      // refused inside it would abort it, and readers at read_uncommitted would see the
      // aborted copies of the commit's other records.
      const fitted = fitRecords(records, limitOf);
      if (fitted.truncated > 0 && attempt === 0) {
        this.log.warn(
          { offset, truncated: fitted.truncated },
          'records larger than their output topic takes are sent truncated',
        );
      }
      try {
        await this.commitOnce(offset, highest, fitted.records, limitOf);
        this.highest = highest;
        return;
      } catch (err) {
        if (isTooLarge(err) && squeeze < MAX_SQUEEZE) {
          // The limit was lowered since it was read: read it again, and fit the records to
          // it. A refusal the new limits do not explain halves them for this commit.
          await this.limits.reread(used.keys());
          const lowered = [...used].some(([t, was]) => this.limits.limitOf(t) < was);
          if (!lowered) squeeze *= 2;
          this.log.warn(
            { offset, limitLowered: lowered, squeeze },
            'the broker refused a record as too large for its output topic; sending the commit again with records fitted to the limits read again',
          );
          this.options.onRetry?.('too-large');
          // A new epoch before the retry: kafkajs keeps the sequence numbers of the other
          // partitions of the failed request, and the broker would take their re-sent
          // records (triggers) for duplicates of the aborted ones and drop them.
          await this.renewProducer();
          continue;
        }
        if (isFenced(err)) {
          throw new PartitionLostError(
            `${topic}[${partition}]: producer fenced at offset ${offset}; another worker owns it`,
          );
        }
        throw new CommitFailedError(
          `${topic}[${partition}]: commit of offset ${offset} failed: ${String(err)}`,
          {
            cause: err,
          },
        );
      }
    }
  }

  /**
   * Waits until the group shows `offset` as committed. EndTxn answers once the commit is
   * decided; the markers that make the offset visible are written just after. A worker that
   * stops waits for this, so whoever looks at the group right after sees the final commit.
   */
  async settled(offset: string, timeoutMs = 10_000): Promise<boolean> {
    const { groupId, topic, partition } = this.options;
    const deadline = Date.now() + timeoutMs;
    for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
      const offsets = await this.admin.fetchOffsets({ groupId, topics: [topic] }).catch(() => undefined);
      const p = offsets?.[0]?.partitions.find((x) => x.partition === partition);
      if (p !== undefined && p.offset !== '-1' && !greater(offset, p.offset)) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }

  /** Replaces the producer by one with a new epoch (it fences nobody but this partition's own past). */
  private async renewProducer(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined);
    this.producer = this.newProducer();
    await fence(this.producer);
  }

  private async commitOnce(
    offset: string,
    highest: string,
    records: readonly OutRecord[],
    limitOf: (topic: string) => number,
  ): Promise<void> {
    const { groupId, topic, partition, progressTopic } = this.options;
    const ledgerRecord: OutRecord = {
      topic: progressTopic,
      key: ProgressLedger.keyOf(groupId, topic, partition),
      value: ProgressLedger.value(highest),
    };
    const tx = await this.producer.transaction();
    try {
      for (const chunk of requestsOf([...records, ledgerRecord], limitOf)) {
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
            messages: rs.map((r) => ({
              key: r.key,
              value: r.value,
              headers: r.headers,
              // The ledger has one partition: every key is found in one place.
              ...(t === progressTopic ? { partition: 0 } : {}),
            })),
          })),
        });
      }
      await tx.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic, partitions: [{ partition, offset, metadata: offsetMetadata(highest) } as never] }],
      });
      await tx.commit();
    } catch (err) {
      await tx.abort().catch(() => undefined);
      throw err;
    }
  }
}

export function isFenced(err: unknown): boolean {
  return causes(err).some((e) => {
    const x = e as { type?: string; code?: number };
    return (x.type !== undefined && FENCED.has(x.type)) || x.code === 90;
  });
}
