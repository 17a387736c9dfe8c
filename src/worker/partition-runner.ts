import type { Admin, Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import { asyncScheduler, type Subscription } from 'rxjs';
import type { Config } from '../config/config.js';
import { ingestPartition, type PartitionPorts } from '../graph/partition-graph.js';
import { timeOncePerTick } from '../graph/time-once-per-tick.js';
import { PartitionCounts } from '../metrics/partition-counts.js';
import { timedCommitSink } from '../metrics/timed-sinks.js';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import { OffsetTracker } from '../model/offset-tracker.js';
import type { OutRecord } from '../model/out-record.js';
import type { Done } from '../model/outcome.js';
import type { Commit } from '../operators/commit-in-order.js';
import { sharedMarks } from '../pushback/intake/marks.js';
import type { PartitionPauses } from '../pushback/intake/partition-pauses.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import type { ProgressLedger } from '../sinks/kafka/progress-ledger.js';
import type { TopicLimits } from '../sinks/kafka/topic-limits.js';
import { TransactionalCommitter } from '../sinks/kafka/transactional-committer.js';
import { PartitionIntake } from './partition-intake.js';
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

/** How a runner ended: drained (revoked or stopping), or failed (lost, commit failed, a bug). */
export type RunnerEnd = { readonly drained: true } | { readonly drained: false; readonly error: unknown };

/**
 * Owns one assigned partition for as long as it lives: its transactional committer, its
 * offset tracker, its intake (PartitionIntake: what enters the graph, and the pause on its
 * load) and its graph; counts its metrics and watches it for stalls.
 *
 * On start it first fences the partition's previous owner, then reads the committed
 * offset and seeks to it, and only then lets records in: an old owner's late commit can
 * no longer slip in between. A runner does not survive a failure: the worker replaces it
 * (from the committed offset) while the partition is still assigned.
 */
export class PartitionRunner {
  private readonly tracker = new OffsetTracker<OutRecord>();
  private readonly intake: PartitionIntake;
  private readonly abort = new AbortController();
  private readonly log: Logger;
  private committer: TransactionalCommitter | undefined;
  private subscription: Subscription | undefined;
  private endOnce: ((end: RunnerEnd) => void) | undefined;
  /** Settles once when the runner is over, however it ended. */
  readonly ended: Promise<RunnerEnd>;
  private readonly labels: { topic: string; partition: string };
  private readonly counts: PartitionCounts;
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
    this.intake = new PartitionIntake(topic, partition, {
      consumer: deps.consumer,
      tracker: this.tracker,
      marks: () => sharedMarks(deps.config.graph, deps.share()),
      hold: (paused) => deps.pauses.set(topic, partition, 'backpressure', paused),
      tookIn: () => this.counts.tookIn(),
      ...(deps.observeClient ? { observeClient: deps.observeClient } : {}),
      log: this.log,
    });
    this.ended = new Promise((resolve) => {
      this.endOnce = (end) => {
        this.endOnce = undefined;
        resolve(end);
      };
    });
  }

  get isAccepting(): boolean {
    return this.intake.isOpen;
  }

  /** Records taken in and not finished (committed or given up) yet. */
  get unfinished(): number {
    return this.tracker.unfinished;
  }

  /** The first offset this runner took in (a record or a gap), if any. */
  get firstTaken(): string | undefined {
    return this.intake.firstTaken;
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
    this.intake.startAt(opened.committed ?? this.resumeAt, opened.committed);
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
      this.intake.records,
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
    this.intake.open();
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
    if (!this.intake.push(messages, lastOffset, highWatermark, fetchedOffset)) return false;
    this.flushMetrics();
    return true;
  }

  /** The fetch moved past `lastOffset` with nothing to deliver below it: see PartitionIntake.gapTo. */
  gapTo(lastOffset: string, firstOffset?: string | null): void {
    this.intake.gapTo(lastOffset, firstOffset);
  }

  /** Stops intake, lets everything in the graph finish and commit, then closes. */
  async drain(timeoutMs: number): Promise<RunnerEnd> {
    if (!this.intake.isOpen) {
      this.abort.abort();
      if (this.subscription === undefined && this.committer === undefined)
        return this.close({ drained: true });
      return this.ended;
    }
    this.intake.end();
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
    const offset = this.intake.committedOffset;
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
    this.intake.shut();
    this.abort.abort();
    if (this.watch) clearInterval(this.watch);
    this.flushMetrics();
    this.subscription?.unsubscribe();
    this.deps.metrics.forgetPartition(this.labels);
    await this.committer
      ?.close()
      .catch((err) => this.log.warn({ err: String(err) }, 'producer disconnect failed'));
    settle(end);
    return end;
  }

  private onCommit(commit: Commit): void {
    this.intake.committedTo(commit.offset);
    this.stall.progressed();
    this.flushMetrics();
    this.deps.metrics.countCommit(commit.records, this.deps.config.kafka);
    this.intake.updatePause();
    this.log.debug({ offset: commit.offset, records: commit.records.length }, 'committed');
  }

  private onDone(batch: readonly Done[]): void {
    this.counts.finished(batch);
    // The commit stage takes these records off the graph's count right after this call, in
    // the same synchronous run: look at the marks once it has.
    queueMicrotask(() => this.intake.updatePause());
  }

  private flushMetrics(): void {
    this.counts.flush();
    this.deps.metrics.setInFlight(this.labels, this.tracker.unfinished, this.intake.bytesInFlight.bytes);
  }

  /** A partition with lag or unfinished work and no commit for STALL_TIMEOUT_MS is said so, once. */
  private checkStall(): void {
    const lag = this.intake.lag;
    const change = this.stall.check(this.tracker.unfinished > 0 || (lag ?? 0) > 0);
    if (change === undefined) return;
    this.deps.metrics.setPartitionStalled(this.labels, change.stalled);
    if (change.stalled) {
      this.log.warn(
        {
          idleForMs: change.idleForMs,
          lag,
          unfinished: this.tracker.unfinished,
          committed: this.intake.committedOffset,
          paused: this.deps.pauses.isPaused(this.topic, this.partition),
        },
        'partition stalled: lag or unfinished work and no commit (see earlier warnings for the cause)',
      );
    } else this.log.info({ committed: this.intake.committedOffset }, 'partition makes progress again');
  }
}
