/**
 * The two measurements every "Elasticsearch is the speed limit" row is made of, on the same
 * documents: the raw `_bulk` loader's rate (pre-encoded bodies, nothing before Elasticsearch)
 * and the shipped worker's drain of the same messages from Kafka. Shared by the pinned
 * benchmark and the partition sweep.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { planWorkload, type WorkloadRecord } from '../../src/generator/workload.js';
import { createIndices, deleteIndices } from './ceiling.js';
import { drainRate, drainWindow } from './drain.js';
import { encodeBodies, loadRaw, type RawDoc } from './raw-bulk.js';
import {
  coreBusySeconds,
  cpuSeconds,
  ensureStack,
  esClient,
  kafkaClient,
  RunResources,
  stackPids,
} from './stack.js';
import { BenchWorker } from './worker.js';
import { benchWorkerEnv } from './worker-env.js';

export interface MeasureContext {
  readonly quick: boolean;
  readonly res: RunResources;
  readonly pids: Readonly<Record<string, number | undefined>>;
  readonly logDir: string;
  readonly workerEntry?: readonly string[];
  /** A counter for unique index and group names within the run. */
  runs: number;
}

/**
 * One benchmark run on the stack: its resources named `<prefix>-<time>-<random>`, a context to
 * measure with, and every topic, index, group and Redis key it made removed at the end.
 */
export async function withMeasureRun<
  O extends { readonly quick: boolean; readonly resultsDir: string; readonly log: (line: string) => void },
  R,
>(
  prefix: string,
  opts: O,
  body: (ctx: MeasureContext & O, kafka: ReturnType<typeof kafkaClient>) => Promise<R>,
): Promise<R> {
  await ensureStack();
  const runId = `${prefix}-${new Date().toISOString().slice(0, 16).replace(/[-:T]/g, '')}-${randomBytes(2).toString('hex')}`;
  const kafka = kafkaClient(`rxingest-bench-${prefix}`);
  const logDir = join(opts.resultsDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const ctx = { ...opts, res: new RunResources(runId, kafka), pids: await stackPids(), logDir, runs: 0 };
  try {
    return await body(ctx, kafka);
  } finally {
    opts.log('  cleaning up the run’s topics, indices, groups and Redis keys …');
    const problems = await ctx.res.cleanUp();
    if (problems.length > 0) opts.log(`  clean-up problems: ${problems.join('; ')}`);
  }
}

/** A loader setting: documents per request and requests in flight. */
export interface LoaderSetting {
  readonly batch: number;
  readonly concurrency: number;
}

export interface CeilingRun extends LoaderSetting {
  readonly rate: number;
  readonly esCores: number;
  /** How busy each core of the machine was over the run (0–1), whoever used it. */
  readonly coreBusy: readonly number[];
  readonly errors: number;
}

export interface WorkerRun {
  readonly rate: number;
  readonly drained: boolean;
  readonly cpuUsPerDoc: number;
  /** CPU µs per document of the other processes on the load's side: Kafka, Redis, this bench. */
  readonly othersUsPerDoc: Readonly<Record<string, number>>;
  /** Share of the drain the worker's main thread was busy (event-loop utilisation). */
  readonly threadBusy: number;
  readonly esCores: number;
  readonly coreBusy: readonly number[];
  readonly peakRssMb: number;
  /** ms from the worker's spawn to its first record done. */
  readonly firstDoneMs: number;
  /** What the resident memory was made of at its peak (process.memoryUsage, MB). */
  readonly atPeak?: { readonly heapUsedMb: number; readonly externalMb: number };
}

export interface LoaderTrial extends LoaderSetting {
  readonly rate: number;
}

/**
 * The loader's best setting for these documents: batch sizes doubled from 500 at 2 in flight
 * while the rate still grows, then requests in flight doubled at the best batch while it still
 * grows (a step that adds less than `minGain` counts as no growth). Each trial loads `sample`
 * documents into fresh indices.
 */
export async function bestLoaderSetting(
  ctx: MeasureContext,
  docs: readonly RawDoc[],
  { sample = 40_000, minGain = 0.02 } = {},
): Promise<{ best: LoaderTrial; trials: LoaderTrial[] }> {
  const es = esClient(120_000);
  const some = docs.slice(0, ctx.quick ? 10_000 : sample);
  const trials: LoaderTrial[] = [];
  const trial = async (batch: number, concurrency: number) => {
    const names = await createIndices(ctx, `c${ctx.runs++}`);
    try {
      const r = await loadRaw(es, encodeBodies(some, names, batch), some.length, concurrency);
      const t = { batch, concurrency, rate: r.rate };
      trials.push(t);
      return t;
    } finally {
      await deleteIndices([names.events, names.profiles]);
    }
  };
  const climb = async (first: LoaderTrial, next: (t: LoaderTrial) => LoaderTrial | undefined) => {
    let best = first;
    for (let step = next(best); step !== undefined; step = next(step)) {
      const t = await trial(step.batch, step.concurrency);
      if (t.rate < best.rate * (1 + minGain)) break;
      best = t;
    }
    return best;
  };
  try {
    const maxBatch = Math.max(500, Math.floor(some.length / 4));
    let best = await trial(500, 2);
    best = await climb(best, (t) =>
      t.batch * 2 <= maxBatch ? { ...t, batch: t.batch * 2, rate: 0 } : undefined,
    );
    best = await climb(best, (t) =>
      t.concurrency < 64 ? { ...t, concurrency: t.concurrency * 2, rate: 0 } : undefined,
    );
    return { best, trials };
  } finally {
    await es.close();
  }
}

/** Every document through the raw loader at one setting, into fresh indices. */
export async function rawCeiling(
  ctx: MeasureContext,
  docs: readonly RawDoc[],
  setting: LoaderSetting,
): Promise<CeilingRun> {
  const es = esClient(120_000);
  const names = await createIndices(ctx, `c${ctx.runs++}`);
  try {
    const bodies = encodeBodies(docs, names, setting.batch);
    const esBefore = cpuOf(ctx.pids.elasticsearch);
    const busyBefore = coreBusySeconds();
    const r = await loadRaw(es, bodies, docs.length, setting.concurrency);
    return {
      ...setting,
      rate: r.rate,
      esCores: (cpuOf(ctx.pids.elasticsearch) - esBefore) / (r.ms / 1000),
      coreBusy: busyBetween(busyBefore, coreBusySeconds(), r.ms),
      errors: r.errors,
    };
  } finally {
    await deleteIndices([names.events, names.profiles]);
    await es.close();
  }
}

const atPeakOf = (worker: BenchWorker) => {
  const m = worker.memoryAtPeak();
  return m ? { atPeak: { heapUsedMb: m.heapUsed / 2 ** 20, externalMb: m.external / 2 ** 20 } } : {};
};

/** Each core's busy share between two readings of coreBusySeconds() `ms` apart. */
export const busyBetween = (a: readonly number[], b: readonly number[], ms: number) =>
  b.map((x, i) => Math.min(1, (x - (a[i] ?? Number.NaN)) / (ms / 1000)));

const cpuOf = (pid: number | undefined) => (pid === undefined ? Number.NaN : (cpuSeconds(pid) ?? Number.NaN));

/**
 * The worker as shipped drains `n` messages of `topic`; its rate, CPU per document,
 * Elasticsearch's CPU and its peak RSS. `env` adds to (or overrides) the shipped settings.
 */
export async function drainWithWorker(
  ctx: MeasureContext,
  topic: string,
  n: number,
  options: {
    readonly cpuProfDir?: string;
    readonly allocationFile?: string;
    readonly env?: Readonly<Record<string, string>>;
  } = {},
) {
  const tag = `w${ctx.runs++}`;
  const name = `${ctx.res.runId}-${tag}`;
  const { env, ...diagnostics } = options;
  const worker = await BenchWorker.start({
    entry: ctx.workerEntry,
    name,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    ...diagnostics,
    env: { ...benchWorkerEnv(ctx.res, tag, [topic]), ...env },
  });
  let drained = false;
  try {
    drained = await worker.waitForDone(n, ctx.quick ? 60_000 : 240_000);
  } finally {
    await worker.stop(30_000);
  }
  await deleteIndices([ctx.res.name(`${tag}-events`), ctx.res.name(`${tag}-profiles`)]);
  const { rate, ms } = drainRate(worker, n);
  const { first, last, endT, used, perDoc, threadBusy } = drainWindow(worker, n);
  const run: WorkerRun = {
    rate,
    drained,
    cpuUsPerDoc: perDoc('worker'),
    othersUsPerDoc: { Kafka: perDoc('kafka'), Redis: perDoc('redis'), bench: perDoc('bench (this process)') },
    threadBusy,
    esCores: used('elasticsearch') / (ms / 1000),
    coreBusy: busyBetween(first?.coreBusy ?? [], last?.coreBusy ?? [], (last?.t ?? 0) - (first?.t ?? 0)),
    peakRssMb: worker.peakRssMb(),
    firstDoneMs: worker.samples.find((s) => s.done > 0)?.t ?? Number.NaN,
    ...atPeakOf(worker),
  };
  return { run, worker, name, window: { fromMs: first?.t ?? 0, toMs: endT } };
}

/** Clients in the drained workloads: enough that per-client order never serializes a partition. */
export const DRAIN_CLIENTS = 10_000;

/**
 * The backlog the pinned comparisons drain: `count` messages of `DRAIN_CLIENTS` clients, a share
 * of them profile updates, 1% re-sent copies, nothing refused (the worker and the loader write the
 * same documents).
 */
export const drainWorkload = (count: number, profileShare: number): WorkloadRecord[] =>
  planWorkload({
    seed: 7,
    count,
    ratePerSec: 5_000,
    clients: DRAIN_CLIENTS,
    profileShare,
    duplicateShare: 0.01,
    poisonShare: 0,
    hostileKeyShare: 0,
  });
