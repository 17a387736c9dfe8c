import type { Admin, Consumer, Kafka, KafkaMessage, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { Subject, type Subscription } from 'rxjs';
import type { Config } from '../config/config.js';
import { ingestPartition, type PartitionPorts } from '../graph/partition-graph.js';
import type { RawRecord } from '../model/message.js';
import { OffsetTracker } from '../model/offset-tracker.js';
import type { RecordDone } from '../model/outcome.js';
import { PartitionLostError, TransactionalCommitter } from '../sinks/kafka-transactional-committer.js';
import type { OutRecord } from '../sinks/ports.js';
import type { WorkerMetrics } from './metrics.js';

export interface PartitionRunnerDeps {
  readonly config: Config;
  readonly kafka: Kafka;
  readonly consumer: Consumer;
  readonly admin: Admin;
  readonly ports: Omit<PartitionPorts, 'commits'>;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  /** Called when the graph fails for a reason that is not "partition lost": the worker must stop. */
  readonly onFatal: (err: unknown) => void;
}

type PauseReason = 'starting' | 'backpressure';

/**
 * Owns one assigned partition: its transactional producer, its offset tracker
 * and its graph. Feeds the graph from kafkajs batches, pauses the partition
 * above the high-water mark of unfinished records and resumes below the low one.
 *
 * On start it first fences the partition's previous owner (connecting a
 * producer with the partition's transactional id aborts that owner's open
 * transaction), then reads the committed offset and seeks to it, and only then
 * lets records in: an old owner's late commit can no longer slip in between.
 */
export class PartitionRunner {
  private readonly input = new Subject<RawRecord>();
  private readonly tracker = new OffsetTracker<OutRecord>();
  private readonly abort = new AbortController();
  private readonly pauses = new Set<PauseReason>();
  private readonly log: Logger;
  private producer: Producer | undefined;
  private subscription: Subscription | undefined;
  private lastOffset: bigint | undefined;
  private accepting = false;
  /** Set once the partition is being given up: from then on its pause state belongs to its next owner. */
  private released = false;
  private finished!: Promise<void>;
  private finish!: () => void;
  private readonly labels: { topic: string; partition: string };
  /** Counted per record as plain numbers, handed to prom-client per batch and commit (labelled metrics cost ~1 µs a call). */
  private readonly counts = { in: 0, indexed: 0, duplicate: 0, stale: 0, 'dead-letter': 0 };

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly deps: PartitionRunnerDeps,
  ) {
    this.log = deps.log.child({ topic, partition });
    this.labels = { topic, partition: String(partition) };
    this.finished = new Promise((resolve) => {
      this.finish = resolve;
    });
  }

  /** Called synchronously from GROUP_JOIN, before kafkajs fetches for the new generation. */
  holdIntake(): void {
    this.setPaused('starting', true);
  }

  async start(): Promise<void> {
    const { config, kafka, admin } = this.deps;
    const transactionalId = TransactionalCommitter.transactionalId(
      config.kafka.groupId,
      this.topic,
      this.partition,
    );
    this.producer = kafka.producer({
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 60_000,
      // kafkajs's idempotence wants unbounded retries; the committer's own backoff and the
      // drain timeout bound how long a commit may wait.
      retry: { retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 5_000 },
    });
    await this.producer.connect();
    // kafkajs sends InitProducerId (which fences the previous owner and aborts its open
    // transaction) only when the first transaction begins, not on connect: begin one now,
    // before reading the committed offset.
    await (await this.producer.transaction()).abort();
    const offsets = await admin.fetchOffsets({ groupId: config.kafka.groupId, topics: [this.topic] });
    const committed = offsets[0]?.partitions.find((p) => p.partition === this.partition)?.offset ?? '-1';
    if (committed !== '-1') {
      this.deps.consumer.seek({ topic: this.topic, partition: this.partition, offset: committed });
    }
    this.log.info({ committed, transactionalId }, 'partition assigned; previous owner fenced');

    const committer = new TransactionalCommitter(
      this.producer,
      {
        groupId: config.kafka.groupId,
        topic: this.topic,
        partition: this.partition,
        retryBaseMs: config.graph.retryBaseMs,
        retryMaxMs: config.graph.retryMaxMs,
      },
      this.log,
      this.abort.signal,
    );
    this.subscription = ingestPartition(
      this.input,
      { ...this.deps.ports, commits: committer },
      {
        settings: config.graph,
        rules: config.triggerRules,
        topics: { triggers: config.kafka.triggersTopic, dlq: config.kafka.dlqTopic },
        tracker: this.tracker,
        signal: this.abort.signal,
        onDone: (done) => this.onDone(done),
      },
    ).subscribe({
      next: (commit) => {
        this.flushMetrics();
        this.deps.metrics.commits.inc();
        const triggers = commit.payloads.filter((r) => r.topic === config.kafka.triggersTopic).length;
        if (triggers > 0) this.deps.metrics.triggers.inc(triggers);
        this.log.debug({ offset: commit.offset, records: commit.payloads.length }, 'committed');
      },
      error: (err) => this.onGraphError(err),
      complete: () => {
        this.log.info({ offset: this.tracker.commitOffset }, 'partition drained');
        this.finish();
      },
    });
    this.accepting = true;
    this.setPaused('starting', false);
  }

  /** Hands a kafkajs batch to the graph. Returns false if the batch was not taken (not started yet). */
  push(messages: readonly KafkaMessage[], highWatermark: string): boolean {
    if (!this.accepting) return false;
    for (const m of messages) {
      const offset = BigInt(m.offset);
      // After a rebalance that kept this partition, kafkajs fetches again from the committed
      // offset: what is already in the graph must not enter twice.
      if (this.lastOffset !== undefined && offset <= this.lastOffset) continue;
      this.lastOffset = offset;
      this.counts.in++;
      this.input.next({
        topic: this.topic,
        partition: this.partition,
        offset: m.offset,
        key: m.key,
        value: m.value,
        headers: m.headers as RawRecord['headers'],
      });
    }
    if (this.lastOffset !== undefined) {
      const lag = BigInt(highWatermark) - this.lastOffset - 1n;
      this.deps.metrics.lag.set(this.labels, Number(lag > 0n ? lag : 0n));
    }
    this.updateBackpressure();
    this.flushMetrics();
    return true;
  }

  /** Stops intake, lets everything in the graph finish and commit, then closes. */
  async drain(timeoutMs: number): Promise<void> {
    if (!this.accepting) {
      await this.close();
      return;
    }
    this.accepting = false;
    this.released = true;
    this.input.complete();
    const timedOut = await Promise.race([
      this.finished.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), timeoutMs).unref()),
    ]);
    if (timedOut) {
      this.log.warn(
        { timeoutMs, committed: this.tracker.commitOffset, unfinished: this.tracker.pending },
        'drain timed out; unfinished records stay uncommitted and will be replayed',
      );
    }
    await this.close();
  }

  private async close(): Promise<void> {
    this.released = true;
    this.flushMetrics();
    this.abort.abort();
    this.subscription?.unsubscribe();
    this.accepting = false;
    this.deps.metrics.inFlight.remove(this.labels);
    this.deps.metrics.lag.remove(this.labels);
    this.deps.metrics.paused.remove(this.labels);
    await this.producer?.disconnect().catch((err) => this.log.warn({ err }, 'producer disconnect failed'));
    this.finish();
  }

  private onDone(done: RecordDone): void {
    this.counts[done.kind]++;
    // The tracker still counts this record (commitInOrder completes it right after this
    // tap): off by one, which does not matter for a watermark.
    if (this.pauses.has('backpressure')) this.updateBackpressure();
  }

  private flushMetrics(): void {
    const m = this.deps.metrics;
    const c = this.counts;
    if (c.in > 0) m.recordsIn.inc(c.in);
    for (const kind of ['indexed', 'duplicate', 'stale', 'dead-letter'] as const) {
      if (c[kind] > 0) m.recordsDone.inc({ outcome: kind }, c[kind]);
      c[kind] = 0;
    }
    c.in = 0;
    m.inFlight.set(this.labels, this.tracker.pending);
  }

  private updateBackpressure(): void {
    const pending = this.tracker.pending;
    const { highWater, lowWater } = this.deps.config.graph;
    if (pending >= highWater) this.setPaused('backpressure', true);
    else if (pending <= lowWater) this.setPaused('backpressure', false);
  }

  private setPaused(reason: PauseReason, on: boolean): void {
    if (this.released) return;
    const was = this.pauses.size > 0;
    if (on) this.pauses.add(reason);
    else this.pauses.delete(reason);
    const now = this.pauses.size > 0;
    if (was === now) return;
    const tp = [{ topic: this.topic, partitions: [this.partition] }];
    if (now) this.deps.consumer.pause(tp);
    else this.deps.consumer.resume(tp);
    this.deps.metrics.paused.set(this.labels, now ? 1 : 0);
    this.log.debug({ paused: now, reason, pending: this.tracker.pending }, now ? 'paused' : 'resumed');
  }

  private onGraphError(err: unknown): void {
    this.accepting = false;
    if (err instanceof PartitionLostError || this.abort.signal.aborted) {
      this.log.info({ err: String(err) }, 'partition lost to another worker; stopping its graph');
      void this.close();
      return;
    }
    this.log.error(
      { err, committed: this.tracker.commitOffset, unfinished: this.tracker.pending },
      'partition graph failed; offsets stay at the last safe commit',
    );
    void this.close();
    this.deps.onFatal(err);
  }
}
