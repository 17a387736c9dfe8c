import type { Admin, Kafka, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { greater } from '../../model/offset-tracker.js';
import { type RetryPolicy, retrying } from '../../retry/retry-policy.js';
import { ProgressLedger } from './progress-ledger.js';

export interface TakeoverOptions {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  /**
   * For the reads of the takeover: a group coordinator that moved or is still loading
   * (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, common just after a broker restart)
   * is asked again a few times before the start of the partition fails.
   */
  readonly retry: RetryPolicy;
  /** Told of each read at the start asked again (`rxingest_retries_total{target="kafka",reason}`). */
  readonly onRetry?: (reason: TakeoverRetryReason) => void;
  /** kafkajs's first retry backoff for this partition's producer (ms); see COMMIT_RETRY_FIRST_MS. */
  readonly retryFirstMs?: number;
}

/** Why the takeover read again: bounded label values. */
export type TakeoverRetryReason = 'offset-read' | 'progress-read';

/** What a partition's new owner starts from. */
export interface TakenOver {
  /** Connected, with this partition's transactional id, the previous owner fenced. */
  readonly producer: Producer;
  /** Makes a producer with this partition's transactional id (a new epoch when it begins). */
  readonly newProducer: () => Producer;
  /** The committed offset to resume from; undefined when the group never committed this partition. */
  readonly committed: string | undefined;
  /** The highest offset ever committed, the committed one included; undefined if none ever was. */
  readonly highest: string | undefined;
  /** The highest offset ever committed, when it is beyond `committed` (offsets were reset). */
  readonly replayedBelow: string | undefined;
}

const OPEN_READ_RETRIES = 6;
/** The first retry backoff of a commit's producer; kafkajs's default is 300 ms. */
export const COMMIT_RETRY_FIRST_MS = 5;
const METADATA_TAG = 'rxingest:highest=';

/**
 * The transactional id of a partition's producer, built from the encoded group, topic and
 * partition, so that no two pipelines can collide.
 */
export function transactionalId(groupId: string, topic: string, partition: number): string {
  return `rxingest/${ProgressLedger.keyOf(groupId, topic, partition)}`;
}

/** The committed offset's metadata that carries the highest offset ever committed. */
export const offsetMetadata = (highest: string): string => `${METADATA_TAG}${highest}`;

/**
 * Takes the partition over: fences the previous owner (its open transaction is aborted),
 * then reads the committed offset and the highest offset ever committed — in that order,
 * so an old owner's late commit cannot slip in between.
 *
 * The new owner's producer bumps the epoch (kafkajs does so when its first transaction
 * begins, not on connect), so the old owner's next commit fails as fenced (kafkajs's
 * TxnOffsetCommit has no generation fencing of its own).
 */
export async function takeOverPartition(
  kafka: Kafka,
  admin: Admin,
  ledger: ProgressLedger,
  options: TakeoverOptions,
  log: Logger,
): Promise<TakenOver> {
  const { groupId, topic, partition } = options;
  const newProducer = () =>
    kafka.producer({
      transactionalId: transactionalId(groupId, topic, partition),
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 60_000,
      // kafkajs's idempotence wants unbounded retries; the runner's drain timeout and the
      // restart of a partition whose commit failed bound how long a commit may take.
      // A transaction begun right after the last one's EndTxn is refused with
      // CONCURRENT_TRANSACTIONS until the broker has written its markers (a few ms), and
      // kafkajs waits initialRetryTime before asking again; its 300 ms default would set
      // the pace of commits back to back (the Java client backs off far less for this case,
      // KAFKA-5477). Since the transaction manager keeps its coordinators
      // (patches/kafkajs+2.2.4.patch), nothing stands between EndTxn and the next
      // AddPartitionsToTxn and the refusal comes nearly every time, so the first backoff is
      // short: a few wasted requests to the coordinator buy commits that follow each other
      // closely (docs/benchmarks.md, `npm run bench -- --only commits`).
      retry: {
        retries: Number.MAX_SAFE_INTEGER,
        initialRetryTime: options.retryFirstMs ?? COMMIT_RETRY_FIRST_MS,
        maxRetryTime: 5_000,
      },
    });
  const producer = newProducer();
  try {
    await fence(producer);
    const read = () =>
      retrying(options.retry, () => admin.fetchOffsets({ groupId, topics: [topic] }), {
        maxRetries: OPEN_READ_RETRIES,
        onRetry: (err, attempt) => {
          options.onRetry?.('offset-read');
          log.warn({ topic, partition, attempt, reason: String(err) }, 'reading the committed offset again');
        },
      }).then((offsets) => offsets[0]?.partitions.find((x) => x.partition === partition));
    const p = await settledRead(read, (x) => x?.offset);
    const committed = p === undefined || p.offset === '-1' ? undefined : p.offset;
    // Metadata missing: offsets reset by a tool, or never committed: ask the ledger.
    let highest =
      fromMetadata(p?.metadata) ??
      (await retrying(
        options.retry,
        () => ledger.highestOf(ProgressLedger.keyOf(groupId, topic, partition)),
        { maxRetries: OPEN_READ_RETRIES, onRetry: () => options.onRetry?.('progress-read') },
      ));
    if (committed !== undefined && (highest === undefined || greater(committed, highest)))
      highest = committed;
    const replayedBelow =
      highest !== undefined && (committed === undefined || greater(highest, committed)) ? highest : undefined;
    return { producer, newProducer, committed, highest, replayedBelow };
  } catch (err) {
    await producer.disconnect().catch(() => undefined);
    throw err;
  }
}

/**
 * Connects a producer of the partition's transactional id and aborts whatever transaction
 * its id left open: the epoch it begins with fences every earlier producer of that id.
 */
export async function fence(producer: Producer): Promise<void> {
  await producer.connect();
  await (await producer.transaction()).abort();
}

/** Reads apart while the committed offset still moves, and at most this many. */
const SETTLE_READS = 8;
const SETTLE_GAP_MS = 150;

/**
 * The committed offset once two reads SETTLE_GAP_MS apart agree. The fence returns once
 * the previous owner's last transaction is complete, but the group coordinator makes its
 * offsets visible a moment later (asynchronously; after a broker failover, later still),
 * and kafkajs speaks OffsetFetch only up to v4, without KIP-447's `require_stable` that
 * would wait for it: one read may show the offset before that commit, and the records it
 * passed would be processed again (their triggers and dead letters sent twice).
 */
async function settledRead<T>(read: () => Promise<T>, offsetOf: (x: T) => string | undefined): Promise<T> {
  let last = await read();
  for (let i = 1; i < SETTLE_READS; i++) {
    await new Promise((r) => setTimeout(r, SETTLE_GAP_MS));
    const next = await read();
    if (offsetOf(next) === offsetOf(last)) return next;
    last = next;
  }
  return last;
}

function fromMetadata(metadata: string | null | undefined): string | undefined {
  if (!metadata?.startsWith(METADATA_TAG)) return undefined;
  const v = metadata.slice(METADATA_TAG.length);
  return /^\d+$/.test(v) ? v : undefined;
}
