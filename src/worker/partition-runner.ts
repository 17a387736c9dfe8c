import type { Admin, Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import { asyncScheduler, Subject, type Subscription } from 'rxjs';
import type { Config } from '../config/config.js';
import { ingestPartition, type PartitionPorts } from '../graph/partition-graph.js';
import { timeOncePerTick } from '../graph/time-once-per-tick.js';
import { PartitionCounts } from '../metrics/partition-counts.js';
import { timedCommitSink } from '../metrics/timed-sinks.js';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import { BytesInFlight, recordBytes } from '../model/bytes-in-flight.js';
import { intakePaused, sharedMarks } from '../model/intake-marks.js';
import { fetchedRecord, type RawRecord } from '../model/message.js';
import { greater, OffsetTracker } from '../model/offset-tracker.js';
import type { OutRecord } from '../model/out-record.js';
import type { Done } from '../model/outcome.js';
import type { Commit } from '../operators/commit-in-order.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import type { ProgressLedger } from '../sinks/kafka-progress-ledger.js';
import type { TopicLimits } from '../sinks/kafka-topic-limits.js';
import { TransactionalCommitter } from '../sinks/kafka-transactional-committer.js';
import { type BatchVerdict, FetchPosition } from './fetch-position.js';
import type { PartitionPauses } from './partition-pauses.js';
import { StallWatch } from './stall-watch.js';

export interface PartitionRunnerDeps {
  readonly config: Config;
  readonly kafka: Kafka;
  readonly consumer: Pick<Consumer, 'seek'>;
  readonly admin: Admin;
  readonly ledger: ProgressLedger;
  /** The output topics' max.message.bytes, shared by every partition. */
  readonly limits?: TopicLimits;
  readonly ports: Omit<PartitionPorts, 'commits'>;
  readonly retry: RetryPolicy;
  readonly pauses: PartitionPauses;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  /**
   * Counts one message of a client, by its record key (hot-client sampling). The key is
   * what the producer library's partitioner spreads by, so it is what the rates are of.
   */
  readonly observeClient?: (topic: string, clientId: string) => void;
  /** How many partitions' worth of work this one may hold now (partitionShare of the assignment). */
  readonly share: () => number;
}

/** Elasticsearch's `_id` limit: a longer key is no client id anybody can spread by. */
const MAX_CLIENT_KEY_BYTES = 512;

/** How a runner ended: drained (revoked or stopping), or failed (lost, commit failed, a bug). */
export type RunnerEnd = { readonly drained: true } | { readonly drained: false; readonly error: unknown };

/**
 * Owns one assigned partition for as long as it lives: its transactional committer, its
 * offset tracker and its graph. Feeds the graph from kafkajs batches (and the gaps that
 * transaction markers and aborted records leave, so the committed offset reaches the
 * partition's end), pauses the partition at the high-water marks of records in its graph
 * and of records not yet durably committed (so a slow transaction counts too), and resumes
 * below the low ones (see intakePaused).
 *
 * On start it first fences the partition's previous owner, then reads the committed
 * offset and seeks to it, and only then lets records in: an old owner's late commit can
 * no longer slip in between. A runner does not survive a failure: the worker replaces it
 * (from the committed offset) while the partition is still assigned.
 */
export class PartitionRunner {
  private readonly input = new Subject<RawRecord>();
  private readonly tracker = new OffsetTracker<OutRecord>();
  private readonly bytesInFlight = new BytesInFlight();
  private readonly abort = new AbortController();
  private readonly log: Logger;
  private committer: TransactionalCommitter | undefined;
  private subscription: Subscription | undefined;
  private lastOffset: string | undefined;
  private first: string | undefined;
  /** Where kafkajs must fetch next: a batch fetched ahead of it is stale (see FetchPosition). */
  private position = new FetchPosition(undefined);
  private accepting = false;
  private endOnce: ((end: RunnerEnd) => void) | undefined;
  /** Settles once when the runner is over, however it ended. */
  readonly ended: Promise<RunnerEnd>;
  private readonly labels: { topic: string; partition: string };
  private readonly counts: PartitionCounts;
  private highWatermark: string | undefined;
  private committed: string | undefined;
  private readonly stall: StallWatch;
  private watch: NodeJS.Timeout | undefined;

  constructor(
    readonly topic: string,
    readonly partition: number,
    /** Where to seek when the group has no committed offset (a replaced runner's first offset). */
    private readonly resumeAt: string | undefined,
    private readonly deps: PartitionRunnerDeps,
  ) {
    this.log = deps.log.child({ topic, partition });
    this.stall = new StallWatch(deps.config.stallTimeoutMs);
    this.counts = new PartitionCounts(deps.metrics);
    this.labels = { topic, partition: String(partition) };
    this.ended = new Promise((resolve) => {
      this.endOnce = (end) => {
        this.endOnce = undefined;
        resolve(end);
      };
    });
  }

  get isAccepting(): boolean {
    return this.accepting;
  }

  /** Records taken in and not finished (committed or given up) yet. */
  get unfinished(): number {
    return this.tracker.unfinished;
  }

  /** The first offset this runner took in (a record or a gap), if any. */
  get firstTaken(): string | undefined {
    return this.first;
  }

  async start(): Promise<void> {
    const { config, kafka, admin, ledger } = this.deps;
    const opened = await TransactionalCommitter.open(
      kafka,
      admin,
      ledger,
      {
        groupId: config.kafka.groupId,
        topic: this.topic,
        partition: this.partition,
        progressTopic: config.kafka.progressTopic,
        retry: this.deps.retry,
        onRetry: (reason) => this.deps.metrics.countRetries('kafka', reason),
        ...(this.deps.limits ? { limits: this.deps.limits } : {}),
      },
      this.log,
    );
    this.committer = opened.committer;
    this.committed = opened.committed;
    const from = opened.committed ?? this.resumeAt;
    this.position = new FetchPosition(from);
    if (from !== undefined) {
      try {
        this.deps.consumer.seek({ topic: this.topic, partition: this.partition, offset: from });
      } catch (err) {
        // kafkajs refuses while it restarts its consumer after a crash: try again a little later.
        throw Object.assign(new Error(`seek to ${from} refused: ${String(err)}`, { cause: err }), {
          retriable: true,
        });
      }
    }
    this.log.info(
      { committed: opened.committed ?? 'none', replayedBelow: opened.replayedBelow },
      opened.replayedBelow === undefined
        ? 'partition assigned; previous owner fenced'
        : 'partition assigned after an offset reset: records below replayedBelow are rebuilt without sending their triggers or dead letters again',
    );
    if (this.abort.signal.aborted) {
      await this.close({ drained: true });
      return;
    }
    this.subscription = ingestPartition(
      this.input,
      {
        ...this.deps.ports,
        commits: timedCommitSink(opened.committer, (s) => this.deps.metrics.observeCommitDuration(s)),
      },
      {
        settings: config.graph,
        rules: config.triggerRules,
        topics: { triggers: config.kafka.triggersTopic, dlq: config.kafka.dlqTopic },
        tracker: this.tracker,
        retry: this.deps.retry,
        replayedBelow: opened.replayedBelow,
        signal: this.abort.signal,
        // One clock read per kafkajs batch, not per record (the windows are seconds long).
        scheduler: timeOncePerTick(asyncScheduler),
        onDone: (batch) => this.onDone(batch),
        share: this.deps.share,
      },
    ).subscribe({
      next: (commit) => this.onCommit(commit),
      error: (err) => void this.close({ drained: false, error: err }),
      complete: () => void this.drained(),
    });
    this.accepting = true;
    this.watch = setInterval(() => this.checkStall(), Math.min(5_000, config.stallTimeoutMs / 2));
    this.watch.unref();
  }

  /** Hands a kafkajs batch to the graph. Returns false if the batch was not taken (not started, or over). */
  push(
    messages: readonly KafkaMessage[],
    lastOffset: string,
    highWatermark: string,
    fetchedOffset?: string,
  ): boolean {
    if (!this.accepting) return false;
    if (!this.admitted(this.position.judgeBatch(fetchedOffset), fetchedOffset, lastOffset)) return false;
    const observe = this.deps.observeClient;
    const receivedAt = Date.now();
    let bytes = 0;
    for (const m of messages) {
      // After a rebalance that kept this partition, kafkajs fetches again from the committed
      // offset: what is already in the graph must not enter twice.
      if (this.lastOffset !== undefined && !greater(m.offset, this.lastOffset)) continue;
      this.lastOffset = m.offset;
      this.first ??= m.offset;
      this.counts.tookIn();
      bytes += recordBytes(m.key, m.value);
      if (observe !== undefined && m.key !== null && m.key.length > 0 && m.key.length <= MAX_CLIENT_KEY_BYTES)
        observe(this.topic, m.key.toString('utf8'));
      this.input.next(fetchedRecord(this.topic, this.partition, m, receivedAt));
    }
    this.bytesInFlight.add(lastOffset, bytes);
    this.position.advance(lastOffset);
    this.gapTo(lastOffset);
    this.highWatermark = highWatermark;
    this.updateBackpressure();
    this.flushMetrics();
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

  /**
   * Whether a batch (or gap) may enter. A stale one — fetched before this start's seek — is
   * refused and the partition sought back to where intake stands, so nothing is passed over.
   */
  private admitted(verdict: BatchVerdict, fetchedAt: string | undefined, lastOffset: string): boolean {
    if (verdict.take) {
      if ('skippedFrom' in verdict)
        this.log.warn(
          { from: verdict.skippedFrom, to: fetchedAt, lastOffset },
          'Kafka no longer has these offsets (retention or compaction?); going on after them',
        );
      return true;
    }
    this.log.warn(
      { expected: verdict.from, fetchedAt, lastOffset },
      'a batch fetched before this partition was sought back came late; refused, fetching again from where intake stands',
    );
    try {
      this.deps.consumer.seek({ topic: this.topic, partition: this.partition, offset: verdict.from });
    } catch (err) {
      this.log.debug({ err: String(err) }, 'could not seek yet; the next batch is judged again');
    }
    return false;
  }

  /** Stops intake, lets everything in the graph finish and commit, then closes. */
  async drain(timeoutMs: number): Promise<RunnerEnd> {
    if (!this.accepting) {
      this.abort.abort();
      if (this.subscription === undefined && this.committer === undefined)
        return this.close({ drained: true });
      return this.ended;
    }
    this.accepting = false;
    this.input.complete();
    const timer = setTimeout(() => {
      this.log.warn(
        { timeoutMs, committed: this.tracker.commitOffset, unfinished: this.tracker.unfinished },
        'drain timed out; unfinished records stay uncommitted and will be replayed',
      );
      void this.close({ drained: false, error: new Error(`drain timed out after ${timeoutMs} ms`) });
    }, timeoutMs);
    timer.unref();
    const end = await this.ended;
    clearTimeout(timer);
    return end;
  }

  /** Gives the partition up at once (the worker is failing): in-flight work is replayed by its next owner. */
  async abandon(): Promise<RunnerEnd> {
    return this.close({ drained: false, error: new Error('abandoned') });
  }

  /** Ends the runner with this error (its start failed). */
  async fail(err: unknown): Promise<RunnerEnd> {
    return this.close({ drained: false, error: err });
  }

  /** The graph finished with everything committed: wait until the last commit shows, then close. */
  private async drained(): Promise<void> {
    const offset = this.committed;
    if (offset !== undefined && !(await this.committer?.settled(offset))) {
      this.log.warn({ offset }, 'drained, but the final commit is not visible in the group yet');
    }
    this.log.info({ offset: offset ?? 'none' }, 'partition drained');
    await this.close({ drained: true });
  }

  private async close(end: RunnerEnd): Promise<RunnerEnd> {
    const settle = this.endOnce;
    if (settle === undefined) return this.ended;
    this.endOnce = undefined;
    this.accepting = false;
    this.abort.abort();
    if (this.watch) clearInterval(this.watch);
    this.flushMetrics();
    this.subscription?.unsubscribe();
    this.deps.pauses.set(this.topic, this.partition, 'backpressure', false);
    this.deps.metrics.forgetPartition(this.labels);
    await this.committer
      ?.close()
      .catch((err) => this.log.warn({ err: String(err) }, 'producer disconnect failed'));
    settle(end);
    return end;
  }

  private onCommit(commit: Commit): void {
    this.committed = commit.offset;
    this.bytesInFlight.committed(commit.offset);
    this.stall.progressed();
    this.flushMetrics();
    this.deps.metrics.countCommit(commit.records, this.deps.config.kafka);
    this.updateBackpressure();
    this.log.debug({ offset: commit.offset, records: commit.records.length }, 'committed');
  }

  private onDone(batch: readonly Done[]): void {
    this.counts.finished(batch);
    // The commit stage takes these records off the graph's count right after this call, in
    // the same synchronous run: look at the marks once it has.
    queueMicrotask(() => this.updateBackpressure());
  }

  private flushMetrics(): void {
    this.counts.flush();
    this.deps.metrics.setInFlight(this.labels, this.tracker.unfinished, this.bytesInFlight.bytes);
  }

  /**
   * Records between this runner's committed offset and the partition's end as last fetched:
   * for the stall watch only, which must know of work waiting at once. `rxingest_consumer_lag`
   * is the broker's sample (pushback-reactions.ts).
   */
  private lag(): number | undefined {
    if (this.highWatermark === undefined) return undefined;
    const lag = Number(this.highWatermark) - Number(this.committed ?? '0');
    return Math.max(lag, 0);
  }

  private updateBackpressure(): void {
    if (!this.accepting) return;
    const paused = intakePaused(
      {
        inGraph: this.tracker.pending,
        uncommitted: this.tracker.unfinished,
        bytes: this.bytesInFlight.bytes,
      },
      sharedMarks(this.deps.config.graph, this.deps.share()),
    );
    if (paused !== undefined) this.deps.pauses.set(this.topic, this.partition, 'backpressure', paused);
  }

  /** A partition with lag or unfinished work and no commit for STALL_TIMEOUT_MS is said so, once. */
  private checkStall(): void {
    const change = this.stall.check(this.tracker.unfinished > 0 || (this.lag() ?? 0) > 0);
    if (change === undefined) return;
    this.deps.metrics.setPartitionStalled(this.labels, change.stalled);
    if (change.stalled) {
      this.log.warn(
        {
          idleForMs: change.idleForMs,
          lag: this.lag(),
          unfinished: this.tracker.unfinished,
          committed: this.committed,
          paused: this.deps.pauses.isPaused(this.topic, this.partition),
        },
        'partition stalled: lag or unfinished work and no commit (see earlier warnings for the cause)',
      );
    } else this.log.info({ committed: this.committed }, 'partition makes progress again');
  }
}
