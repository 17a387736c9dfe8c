import type { Logger } from 'pino';
import type { WorkerMetrics } from '../metrics/worker-metrics.js';
import { classifyError } from '../model/failures.js';
import { type Assignment, partitionKey as key, type MemberAssignment } from '../model/topic-partition.js';
import type { PartitionPauses } from '../pushback/intake/partition-pauses.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import { CommitFailedError, PartitionLostError } from '../sinks/kafka/transactional-committer.js';
import type { PartitionRunner, RunnerEnd } from './partition-runner.js';

export interface PartitionRegistryDeps {
  /** `resumeAt`: where a replaced runner started taking records, for when nothing is committed yet. */
  readonly createRunner: (topic: string, partition: number, resumeAt: string | undefined) => PartitionRunner;
  readonly pauses: PartitionPauses;
  /** The worker's one record of its assignment: written here, read by push-back too. */
  readonly assignment: Assignment;
  readonly retry: RetryPolicy;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  /** How long a revoked partition may take to drain. */
  readonly drainTimeoutMs: number;
  /** After being fenced, wait at least this long before taking the partition back (a rebalance may be coming). */
  readonly fencedBackoffMs: number;
  /** A failure that is nobody's fault we know of (a bug): the worker must stop. */
  readonly onFatal: (err: unknown) => void;
}

interface Slot {
  readonly runner: PartitionRunner;
  readonly topic: string;
  readonly partition: number;
}

/**
 * Which partitions this worker owns, and one live runner for each. kafkajs has no revoke
 * callback: every GROUP_JOIN carries the whole new assignment, so `assign` drains what left
 * and starts what came. A runner that fails while its partition is still assigned —
 * fenced by a zombie, a commit whose outcome is unknown, Kafka away during start-up — is
 * replaced from the committed offset after a backoff; it never stays registered while
 * refusing batches. Only a failure of unknown cause stops the worker.
 */
export class PartitionRegistry {
  private readonly slots = new Map<string, Slot>();
  private readonly failures = new Map<string, number>();
  private readonly restarts = new Map<string, NodeJS.Timeout>();
  /**
   * Per partition, the first offset a failed runner took in. A replacement resumes from the
   * committed offset; with none committed yet, kafkajs's fetch position is already past what
   * the failed runner took (it was never committed), so the replacement must seek back here.
   */
  private readonly resumeAt = new Map<string, string>();
  private stopping = false;

  constructor(private readonly deps: PartitionRegistryDeps) {}

  /** The new assignment (synchronously from GROUP_JOIN, before the generation's first fetch). */
  assign(assignment: MemberAssignment): void {
    const assigned = this.deps.assignment;
    assigned.set(assignment);
    if (this.stopping) return;
    for (const [k, slot] of [...this.slots]) {
      if (assigned.ownsKey(k)) continue;
      this.slots.delete(k);
      this.resumeAt.delete(k);
      this.deps.log.info({ topic: slot.topic, partition: slot.partition }, 'partition revoked; draining');
      this.deps.pauses.forget(slot.topic, slot.partition);
      void slot.runner.drain(this.deps.drainTimeoutMs);
    }
    for (const [k, timer] of this.restarts) {
      if (assigned.ownsKey(k)) continue;
      clearTimeout(timer);
      this.restarts.delete(k);
      this.resumeAt.delete(k);
    }
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const p of partitions)
        if (!this.slots.has(key(topic, p)) && !this.restarts.has(key(topic, p))) this.start(topic, p);
    }
  }

  /** The runner taking records for this partition, if one does. */
  runnerFor(topic: string, partition: number): PartitionRunner | undefined {
    return this.slots.get(key(topic, partition))?.runner;
  }

  /** Records taken in and not finished yet, over every partition this worker runs. */
  get unfinished(): number {
    let n = 0;
    for (const s of this.slots.values()) n += s.runner.unfinished;
    return n;
  }

  get partitions(): readonly { topic: string; partition: number }[] {
    return [...this.slots.values()].map(({ topic, partition }) => ({ topic, partition }));
  }

  /** Stops taking new work and drains every runner (commit included), in parallel. */
  async drainAll(timeoutMs: number): Promise<void> {
    this.stopping = true;
    for (const t of this.restarts.values()) clearTimeout(t);
    this.restarts.clear();
    const slots = [...this.slots.values()];
    for (const s of slots) this.deps.pauses.set(s.topic, s.partition, 'stopping', true);
    await Promise.allSettled(slots.map((s) => s.runner.drain(timeoutMs)));
    this.slots.clear();
  }

  /** Gives everything up at once (the worker is failing): nothing more is committed. */
  async abandonAll(): Promise<void> {
    this.stopping = true;
    for (const t of this.restarts.values()) clearTimeout(t);
    this.restarts.clear();
    const slots = [...this.slots.values()];
    this.slots.clear();
    await Promise.allSettled(slots.map((s) => s.runner.abandon()));
  }

  private start(topic: string, partition: number): void {
    const k = key(topic, partition);
    const runner = this.deps.createRunner(topic, partition, this.resumeAt.get(k));
    this.slots.set(k, { runner, topic, partition });
    this.deps.pauses.set(topic, partition, 'starting', true);
    runner.start().then(
      () => {
        if (this.slots.get(k)?.runner !== runner) return;
        this.failures.delete(k);
        this.deps.pauses.set(topic, partition, 'starting', false);
      },
      (err: unknown) => void runner.fail(err),
    );
    void runner.ended.then((end) => this.ended(topic, partition, runner, end));
  }

  private ended(topic: string, partition: number, runner: PartitionRunner, end: RunnerEnd): void {
    const k = key(topic, partition);
    if (this.slots.get(k)?.runner !== runner) return;
    this.slots.delete(k);
    if (this.stopping || !this.deps.assignment.ownsKey(k)) return;
    const firstTaken = runner.firstTaken;
    if (firstTaken !== undefined && !this.resumeAt.has(k)) this.resumeAt.set(k, firstTaken);
    if (end.drained) {
      // Drained while still assigned (it should not happen): take it up again.
      this.restartLater(topic, partition, 'drained', 0);
      return;
    }
    const err = end.error;
    const failures = (this.failures.get(k) ?? 0) + 1;
    this.failures.set(k, failures);
    const log = { topic, partition, err: String(err), failures };
    if (err instanceof PartitionLostError) {
      this.deps.metrics.countPartitionFenced();
      this.deps.log.warn(
        log,
        'partition fenced by another producer while still assigned here; taking it back unless a rebalance moves it',
      );
      this.restartLater(
        topic,
        partition,
        'fenced',
        Math.max(this.deps.fencedBackoffMs, this.deps.retry.delay(failures - 1)),
      );
    } else if (err instanceof CommitFailedError || classifyError(err) === 'transient') {
      this.deps.log.warn(log, 'partition failed; starting it again from the committed offset');
      this.restartLater(
        topic,
        partition,
        err instanceof CommitFailedError ? 'commit-failed' : 'transient',
        this.deps.retry.delay(failures - 1),
      );
    } else {
      this.deps.log.error(
        log,
        'partition failed for an unknown reason; stopping the worker (offsets stay at the last safe commit)',
      );
      this.deps.onFatal(err);
    }
  }

  private restartLater(topic: string, partition: number, reason: string, delayMs: number): void {
    const k = key(topic, partition);
    this.deps.pauses.set(topic, partition, 'starting', true);
    this.deps.metrics.countPartitionRestart(reason);
    // A restart from the committed offset is Kafka work done again: a retry against Kafka.
    this.deps.metrics.countRetries('kafka', reason);
    const timer = setTimeout(() => {
      this.restarts.delete(k);
      if (!this.stopping && this.deps.assignment.ownsKey(k) && !this.slots.has(k))
        this.start(topic, partition);
    }, delayMs);
    this.restarts.set(k, timer);
  }
}
