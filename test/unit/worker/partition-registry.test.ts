import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { parsePrometheusText, samples } from '../../../harness/prometheus-text.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import { Assignment } from '../../../src/model/topic-partition.js';
import { PartitionPauses } from '../../../src/pushback/intake/partition-pauses.js';
import { createRetryPolicy } from '../../../src/retry/retry-policy.js';
import { CommitFailedError, PartitionLostError } from '../../../src/sinks/kafka/transactional-committer.js';
import { PartitionRegistry } from '../../../src/worker/partition-registry.js';
import type { PartitionRunner, RunnerEnd } from '../../../src/worker/partition-runner.js';

/** A runner double: start() resolves at once; the test ends it as the real one would end. */
class FakeRunner {
  readonly started = Promise.resolve();
  drained = false;
  private settle!: (end: RunnerEnd) => void;
  readonly ended = new Promise<RunnerEnd>((r) => {
    this.settle = r;
  });
  /** What the real runner reports: the first offset it took in. */
  firstTaken: string | undefined;
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly resumeAt: string | undefined,
  ) {}
  start = () => this.started;
  drain = async () => {
    this.drained = true;
    this.settle({ drained: true });
    return this.ended;
  };
  abandon = async () => this.end(new Error('abandoned'));
  fail = async (err: unknown) => this.end(err);
  end(err: unknown): Promise<RunnerEnd> {
    this.settle({ drained: false, error: err });
    return this.ended;
  }
}

function setup() {
  vi.useFakeTimers();
  const runners: FakeRunner[] = [];
  const paused = new Set<string>();
  const consumer = {
    pause: (tps: { topic: string; partitions: number[] }[]) => {
      for (const p of tps[0]!.partitions) paused.add(`${tps[0]!.topic}[${p}]`);
    },
    resume: (tps: { topic: string; partitions: number[] }[]) => {
      for (const p of tps[0]!.partitions) paused.delete(`${tps[0]!.topic}[${p}]`);
    },
  };
  const log = pino({ level: 'silent' });
  const pauses = new PartitionPauses(consumer as never, { paused: () => undefined }, log);
  const fatal: unknown[] = [];
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  const registry = new PartitionRegistry({
    createRunner: (topic, partition, resumeAt) => {
      const r = new FakeRunner(topic, partition, resumeAt);
      runners.push(r);
      return r as unknown as PartitionRunner;
    },
    pauses,
    assignment: new Assignment(),
    retry: createRetryPolicy({ baseMs: 100, maxMs: 100, random: () => 1 }),
    metrics,
    log,
    drainTimeoutMs: 1_000,
    fencedBackoffMs: 6_000,
    onFatal: (err) => fatal.push(err),
  });
  const flush = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  const kafkaRetries = async () =>
    Object.fromEntries(
      samples(parsePrometheusText(await metrics.registry.metrics()), 'rxingest_retries_total', {
        target: 'kafka',
      }).map((x) => [x.labels.reason, x.value]),
    );
  return { registry, runners, paused, fatal, flush, kafkaRetries };
}

describe('PartitionRegistry', () => {
  it('starts a runner per assigned partition, holding intake until it has started', async () => {
    const { registry, runners, paused, flush } = setup();
    registry.assign({ t: [0, 1] });
    expect(runners.map((r) => `${r.topic}[${r.partition}]`)).toEqual(['t[0]', 't[1]']);
    expect(paused).toEqual(new Set(['t[0]', 't[1]']));
    await flush();
    expect(paused.size).toBe(0);
    expect(registry.runnerFor('t', 1)).toBe(runners[1]);
    vi.useRealTimers();
  });

  it('drains what is revoked and starts what is new on the next assignment', async () => {
    const { registry, runners, flush } = setup();
    registry.assign({ t: [0, 1] });
    await flush();
    registry.assign({ t: [1, 2] });
    expect(runners[0]!.drained).toBe(true);
    expect(registry.runnerFor('t', 0)).toBeUndefined();
    expect(runners.map((r) => r.partition)).toEqual([0, 1, 2]);
    vi.useRealTimers();
  });

  it('replaces a runner fenced away while its partition is still assigned, after the fenced backoff', async () => {
    const { registry, runners, paused, flush } = setup();
    registry.assign({ t: [0] });
    await flush();
    await runners[0]!.end(new PartitionLostError('fenced'));
    await flush();
    expect(registry.runnerFor('t', 0)).toBeUndefined();
    expect(paused.has('t[0]')).toBe(true); // no busy fetching while nobody owns it here
    await vi.advanceTimersByTimeAsync(5_999);
    expect(runners).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runners).toHaveLength(2);
    expect(registry.runnerFor('t', 0)).toBe(runners[1]);
    vi.useRealTimers();
  });

  it('does not take a fenced partition back when a rebalance moved it meanwhile', async () => {
    const { registry, runners, flush } = setup();
    registry.assign({ t: [0, 1] });
    await flush();
    await runners[0]!.end(new PartitionLostError('fenced'));
    await flush();
    registry.assign({ t: [1] });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runners.map((r) => r.partition)).toEqual([0, 1]);
    vi.useRealTimers();
  });

  it('starts a partition again after a commit failed (outcome unknown), with the retry policy', async () => {
    const { registry, runners, flush, fatal } = setup();
    registry.assign({ t: [0] });
    await flush();
    await runners[0]!.end(new CommitFailedError('coordinator gone'));
    await flush();
    await vi.advanceTimersByTimeAsync(100);
    expect(runners).toHaveLength(2);
    expect(fatal).toEqual([]);
    vi.useRealTimers();
  });

  it('hands a replacement the first offset the failed runner took, for a partition with nothing committed yet', async () => {
    const { registry, runners, flush } = setup();
    registry.assign({ t: [0] });
    await flush();
    expect(runners[0]!.resumeAt).toBeUndefined();
    runners[0]!.firstTaken = '0';
    await runners[0]!.end(new CommitFailedError('first commit: broker gone'));
    await vi.advanceTimersByTimeAsync(100);
    expect(runners[1]!.resumeAt).toBe('0');
    // The replacement failed before it took anything (or from later on): still from the first start.
    runners[1]!.firstTaken = '40';
    await runners[1]!.end(new CommitFailedError('again'));
    await vi.advanceTimersByTimeAsync(100);
    expect(runners[2]!.resumeAt).toBe('0');
    // Revoked and assigned again: a new owner's start, from the committed offset as usual.
    registry.assign({});
    registry.assign({ t: [0] });
    expect(runners.at(-1)!.resumeAt).toBeUndefined();
    vi.useRealTimers();
  });

  it('counts each restart as a retry against Kafka, by its reason', async () => {
    const { registry, runners, flush, kafkaRetries } = setup();
    registry.assign({ t: [0, 1] });
    await flush();
    expect(await kafkaRetries()).toEqual({});
    await runners[0]!.end(new CommitFailedError('coordinator gone'));
    await runners[1]!.end(new PartitionLostError('fenced'));
    await flush();
    expect(await kafkaRetries()).toEqual({ 'commit-failed': 1, fenced: 1 });
    vi.useRealTimers();
  });

  it('stops the worker on a failure of unknown cause', async () => {
    const { registry, runners, flush, fatal } = setup();
    registry.assign({ t: [0] });
    await flush();
    const bug = new TypeError('x is undefined');
    await runners[0]!.end(bug);
    await flush();
    expect(fatal).toEqual([bug]);
    vi.useRealTimers();
  });

  it('drains every runner on drainAll and starts nothing afterwards', async () => {
    const { registry, runners, flush } = setup();
    registry.assign({ t: [0, 1] });
    await flush();
    await registry.drainAll(1_000);
    expect(runners.every((r) => r.drained)).toBe(true);
    registry.assign({ t: [0, 1, 2] });
    expect(runners).toHaveLength(2);
    vi.useRealTimers();
  });
});
