import type { Consumer, KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import { type Observable, Subject } from 'rxjs';
import { fetchedRecord, type RawRecord } from '../model/message.js';
import { greater, type OffsetTracker } from '../model/offset-tracker.js';
import type { OutRecord } from '../model/out-record.js';
import { BytesInFlight, recordBytes } from '../pushback/intake/bytes-in-flight.js';
import { type IntakeMarks, intakePaused } from '../pushback/intake/marks.js';
import { type BatchVerdict, FetchPosition } from './fetch-position.js';

export interface PartitionIntakeDeps {
  readonly consumer: Pick<Consumer, 'seek'>;
  /** The partition's offset tracker: what its graph holds, for the pause. */
  readonly tracker: OffsetTracker<OutRecord>;
  /** HIGH_WATER, LOW_WATER, HIGH_WATER_BYTES. */
  /** Asked at every decision: a partition's share of the worker's budget changes with the assignment. */
  readonly marks: () => IntakeMarks;
  /** Pauses (true) or resumes (false) the partition for its intake's load. */
  readonly hold: (paused: boolean) => void;
  /** Counts one record taken in (metrics). */
  readonly tookIn: () => void;
  /** Counts one message of a client, by its record key (hot-client sampling). */
  readonly observeClient?: (topic: string, clientId: string) => void;
  readonly log: Logger;
}

/** Elasticsearch's `_id` limit: a longer key is no client id anybody can spread by. */
const MAX_CLIENT_KEY_BYTES = 512;

/**
 * What enters one partition's graph, and when: kafkajs batches, and the gaps that transaction
 * markers and aborted records leave (so the committed offset reaches the partition's end),
 * each offset once and in order. A batch fetched before the partition was sought back is
 * refused (see FetchPosition). The partition pauses at the high-water marks of records in its
 * graph, of records not yet durably committed (so a slow transaction counts too) and of their
 * bytes, and resumes below the low ones (see intakePaused).
 *
 * It is open between `open()` and `end()` (no more records: the graph drains) or `shut()`.
 */
export class PartitionIntake {
  private readonly input = new Subject<RawRecord>();
  /** Key and value bytes taken in and not yet committed. */
  readonly bytesInFlight = new BytesInFlight();
  private lastOffset: string | undefined;
  private first: string | undefined;
  /** Where kafkajs must fetch next: a batch fetched ahead of it is stale (see FetchPosition). */
  private position = new FetchPosition(undefined);
  private accepting = false;
  private committed: string | undefined;
  private highWatermark: string | undefined;

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly deps: PartitionIntakeDeps,
  ) {}

  /** The records and gaps the graph takes in. */
  get records(): Observable<RawRecord> {
    return this.input;
  }

  get isOpen(): boolean {
    return this.accepting;
  }

  /** The first offset taken in (a record or a gap), if any. */
  get firstTaken(): string | undefined {
    return this.first;
  }

  /** The partition's committed offset: where it started, then each durable commit. */
  get committedOffset(): string | undefined {
    return this.committed;
  }

  /**
   * Records between the committed offset and the partition's end as last fetched: known at
   * once, from the fetches (the stall watch needs that), unlike the broker's lag sample.
   */
  get lag(): number | undefined {
    if (this.highWatermark === undefined) return undefined;
    const lag = Number(this.highWatermark) - Number(this.committed ?? '0');
    return Math.max(lag, 0);
  }

  /**
   * Seeks the partition to `from` (the committed offset, or where a replaced runner began):
   * intake expects kafkajs to fetch from there.
   */
  startAt(from: string | undefined, committed: string | undefined): void {
    this.committed = committed;
    this.position = new FetchPosition(from);
    if (from === undefined) return;
    try {
      this.deps.consumer.seek({ topic: this.topic, partition: this.partition, offset: from });
    } catch (err) {
      // kafkajs refuses while it restarts its consumer after a crash: try again a little later.
      throw Object.assign(new Error(`seek to ${from} refused: ${String(err)}`, { cause: err }), {
        retriable: true,
      });
    }
  }

  /** Lets records in (the graph is running). */
  open(): void {
    this.accepting = true;
  }

  /** Lets nothing more in and completes the records: the graph drains. */
  end(): void {
    this.accepting = false;
    this.input.complete();
  }

  /** Lets nothing more in and lifts its pause: the runner is closing. */
  shut(): void {
    this.accepting = false;
    this.deps.hold(false);
  }

  /** Hands a kafkajs batch to the graph. Returns false if the batch was not taken (not open, or stale). */
  push(
    messages: readonly KafkaMessage[],
    lastOffset: string,
    highWatermark: string,
    fetchedOffset?: string,
  ): boolean {
    if (!this.accepting) return false;
    if (!this.admitted(this.position.judgeBatch(fetchedOffset), fetchedOffset, lastOffset)) return false;
    const { observeClient: observe, tookIn } = this.deps;
    const receivedAt = Date.now();
    let bytes = 0;
    for (const m of messages) {
      // After a rebalance that kept this partition, kafkajs fetches again from the committed
      // offset: what is already in the graph must not enter twice.
      if (this.lastOffset !== undefined && !greater(m.offset, this.lastOffset)) continue;
      this.lastOffset = m.offset;
      this.first ??= m.offset;
      tookIn();
      bytes += recordBytes(m.key, m.value);
      if (observe !== undefined && m.key !== null && m.key.length > 0 && m.key.length <= MAX_CLIENT_KEY_BYTES)
        observe(this.topic, m.key.toString('utf8'));
      this.input.next(fetchedRecord(this.topic, this.partition, m, receivedAt));
    }
    this.bytesInFlight.add(lastOffset, bytes);
    this.position.advance(lastOffset);
    this.gapTo(lastOffset);
    this.highWatermark = highWatermark;
    this.updatePause();
    return true;
  }

  /**
   * The fetch moved past `lastOffset` with nothing more to deliver below it (transaction
   * markers, aborted records): a gap entry lets the commit reach past them.
   */
  gapTo(lastOffset: string, firstOffset?: string | null): void {
    if (!this.accepting || (this.lastOffset !== undefined && !greater(lastOffset, this.lastOffset))) return;
    if (this.lastOffset === undefined && this.committed !== undefined && greater(this.committed, lastOffset))
      return;
    if (!this.admitted(this.position.judgeGap(firstOffset), firstOffset ?? undefined, lastOffset)) return;
    this.lastOffset = lastOffset;
    this.first ??= firstOffset ?? lastOffset;
    this.position.advance(lastOffset);
    this.input.next({
      topic: this.topic,
      partition: this.partition,
      offset: lastOffset,
      key: null,
      value: null,
      gap: true,
    });
  }

  /** A commit is durable: its records' bytes leave the count (updatePause looks at the pause again). */
  committedTo(offset: string): void {
    this.committed = offset;
    this.bytesInFlight.committed(offset);
  }

  /** Pauses or resumes the partition as its load says (records in the graph, uncommitted, bytes). */
  updatePause(): void {
    if (!this.accepting) return;
    const { tracker, marks, hold } = this.deps;
    const paused = intakePaused(
      { inGraph: tracker.pending, uncommitted: tracker.unfinished, bytes: this.bytesInFlight.bytes },
      marks(),
    );
    if (paused !== undefined) hold(paused);
  }

  /**
   * Whether a batch (or gap) may enter. A stale one — fetched before this start's seek — is
   * refused and the partition sought back to where intake stands, so nothing is passed over.
   */
  private admitted(verdict: BatchVerdict, fetchedAt: string | undefined, lastOffset: string): boolean {
    if (verdict.take) {
      if ('skippedFrom' in verdict)
        this.deps.log.warn(
          { from: verdict.skippedFrom, to: fetchedAt, lastOffset },
          'Kafka no longer has these offsets (retention or compaction?); going on after them',
        );
      return true;
    }
    this.deps.log.warn(
      { expected: verdict.from, fetchedAt, lastOffset },
      'a batch fetched before this partition was sought back came late; refused, fetching again from where intake stands',
    );
    try {
      this.deps.consumer.seek({ topic: this.topic, partition: this.partition, offset: verdict.from });
    } catch (err) {
      this.deps.log.debug({ err: String(err) }, 'could not seek yet; the next batch is judged again');
    }
    return false;
  }
}
