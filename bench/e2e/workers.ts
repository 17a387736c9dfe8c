/** The worker's runs: a drain then a latency run at a set load, plain drains, the profiled and heap-capped drains. */

import { bucketsBetween, histogramBuckets } from '../../harness/prometheus-histograms.js';
import { SINK_STAGES } from '../../src/metrics/metric-labels.js';
import { deleteIndices } from '../lib/ceiling.js';
import { drainRate } from '../lib/drain.js';
import { measureLatency } from '../lib/latency.js';
import { type ProfileSummary, summarizeProfileFile } from '../lib/profile.js';
import { redisClient, sleep } from '../lib/stack.js';
import { fmt, summarize } from '../lib/stats.js';
import { BenchWorker, cpuBetween, cpuProfileOf, type MemoryBreakdown } from '../lib/worker.js';
import { benchWorkerEnv } from '../lib/worker-env.js';
import {
  CLIENTS,
  type Ctx,
  type DrainResult,
  type HeapDiagnosis,
  type OwnView,
  type WorkerPoint,
} from './types.js';

export function ownViewBetween(before: string | undefined, after: string | undefined): OwnView | undefined {
  if (before === undefined || after === undefined) return undefined;
  const between = (name: string, labels?: Record<string, string>) =>
    bucketsBetween(histogramBuckets(before, name, labels), histogramBuckets(after, name, labels));
  return {
    indexed: between('rxingest_e2e_latency_seconds'),
    bulk: between('rxingest_es_request_duration_seconds', { op: 'bulk' }),
    kafka: between('rxingest_record_latency_seconds', { part: 'kafka' }),
    worker: between('rxingest_record_latency_seconds', { part: 'worker' }),
    stages: new Map(
      SINK_STAGES.map((stage) => [stage, between('rxingest_stage_duration_seconds', { stage })]),
    ),
  };
}

export function workerEnv(
  ctx: Ctx,
  key: string,
  topics: string[],
  batchMax?: number,
): Record<string, string> {
  return {
    ...benchWorkerEnv(ctx.res, key, topics),
    ...(batchMax !== undefined && batchMax !== ctx.defaults.batchMax ? { BATCH_MAX: String(batchMax) } : {}),
  };
}

export async function runWorkerPoint(
  ctx: Ctx,
  o: {
    batchMax: number;
    backlog: string;
    n: number;
    drainCapMs: number;
    /** Offered load for the latency phase; undefined = half of this point's own drain rate. */
    offered?: number;
    latencyMs: number;
    seed: number;
  },
): Promise<WorkerPoint> {
  const key = `w${o.batchMax}`;
  const live = ctx.res.name(`${key}-live`);
  await ctx.res.createTopic(live);
  const notes: string[] = [];
  let w = await BenchWorker.start({
    entry: ctx.workerEntry,
    name: `${ctx.runId}-${key}`,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    env: workerEnv(ctx, key, [o.backlog, live], o.batchMax),
  });
  const workers = [w];
  try {
    const drained = await w.waitForDone(o.n, o.drainCapMs);
    const { rate, ms } = drainRate(w, o.n);
    const drainSamples = [...w.samples];
    const firstDone = drainSamples.find((s) => s.done > 0) ?? drainSamples[0]!;
    const cpu = cpuBetween(firstDone, drainSamples.at(-1)!, ctx.cores);
    const drainDone = w.last?.done ?? 0;
    const marksOf = (k: string) => ({
      keyPrefix: `${ctx.runId}:${k}:`,
      group: ctx.res.name(`${k}-group`),
      ttlMs: 3_600_000, // PROCESSED_TTL_MS: the worker's default
    });
    let marks = marksOf(key);
    if (!drained) {
      notes.push(
        `BATCH_MAX=${o.batchMax}: the backlog did not drain within ${fmt(o.drainCapMs / 1000, 0)} s; rate measured over that time`,
      );
      await w.stop(3_000);
      // The latency phase needs a worker without a backlog: a fresh one, on the live topic only.
      w = await BenchWorker.start({
        entry: ctx.workerEntry,
        name: `${ctx.runId}-${key}-latency`,
        logDir: ctx.logDir,
        stackPids: ctx.pids,
        env: workerEnv(ctx, `${key}-lat`, [live], o.batchMax),
      });
      workers.push(w);
      marks = marksOf(`${key}-lat`);
      await sleep(3_000);
    }
    const liveFrom = w.samples.length;
    const base = w.last?.done ?? 0;
    const offered = o.offered ?? rate / 2;
    const redis = redisClient();
    let latency: WorkerPoint['latency'];
    let ownView: OwnView | undefined;
    try {
      const metricsBefore = await w.metricsText();
      const l = await measureLatency({
        kafka: ctx.kafka,
        redis,
        topic: live,
        marks,
        ratePerSec: offered,
        durationMs: o.latencyMs,
        seed: o.seed,
        clients: CLIENTS,
        settleMs: ctx.quick ? 5_000 : 10_000,
      });
      latency = {
        ...l,
        summary: summarize(l.latencies),
        offered,
        sampleTimeOfStart: l.startedAt - w.spawnedAt,
      };
      await w.waitForDone(base + l.produced, 5_000).catch(() => false);
      ownView = ownViewBetween(metricsBefore, await w.metricsText());
    } finally {
      redis.disconnect();
    }
    const liveSamples = w.samples.slice(liveFrom);
    const liveCpu =
      liveSamples.length >= 2 ? cpuBetween(liveSamples[0]!, liveSamples.at(-1)!, ctx.cores) : undefined;
    for (const x of workers) await x.stop(10_000);
    const peakRssMb = Math.max(...workers.map((x) => x.peakRssMb()));
    const memory = workers
      .map((x) => x.memoryAtPeak())
      .reduce<MemoryBreakdown | undefined>((a, m) => (m && (!a || m.rss > a.rss) ? m : a), undefined);
    const outcomes = { ...(drainSamples.at(-1)?.byOutcome ?? {}) };
    await deleteIndices([
      ctx.res.name(`${key}-events`),
      ctx.res.name(`${key}-profiles`),
      ctx.res.name(`${key}-lat-events`),
      ctx.res.name(`${key}-lat-profiles`),
    ]);
    return {
      batchMax: o.batchMax,
      drained,
      drainDone,
      drainMs: ms,
      rate,
      latency,
      ownView,
      peakRssMb,
      drainSamples,
      liveSamples,
      cpu,
      liveCpu,
      outcomes,
      notes,
      memory,
    };
  } finally {
    for (const x of workers) await x.stop(3_000).catch(() => undefined);
  }
}

/** A short extra drain with `node --cpu-prof`, to see where the worker's time goes. */
export async function profileWorker(
  ctx: Ctx,
  backlog: string,
  n: number,
  ms: number,
): Promise<ProfileSummary | undefined> {
  const key = 'wprof';
  const name = `${ctx.runId}-${key}`;
  const w = await BenchWorker.start({
    entry: ctx.workerEntry,
    name,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    cpuProfDir: ctx.profDir,
    env: workerEnv(ctx, key, [backlog]),
  });
  try {
    await w.waitForDone(n, ms);
  } finally {
    await w.stop(30_000);
  }
  await deleteIndices([ctx.res.name(`${key}-events`), ctx.res.name(`${key}-profiles`)]);
  // Only the drain: from the first sample showing work to the last record done (or the cap).
  const start = w.samples.find((s) => s.inFlight > 0 || s.done > 0)?.t ?? 0;
  const end = w.timeOfDone(n) ?? w.samples.at(-2)?.t ?? Number.POSITIVE_INFINITY;
  return Promise.resolve()
    .then(() => summarizeProfileFile(cpuProfileOf(ctx.profDir, name), { fromMs: start, toMs: end }))
    .catch(() => undefined);
}

/**
 * Is the RSS live data or garbage V8 has not collected yet? The same drain with the old space
 * capped: if it still runs, the live set fits under the cap, and the rest of the RSS was heap
 * V8 grew instead of collecting (at the price of more GC).
 */
export async function diagnoseHeap(
  ctx: Ctx,
  backlog: string,
  n: number,
  capMs: number,
  heapMb: number,
): Promise<HeapDiagnosis> {
  const key = `wheap${heapMb}`;
  const w = await BenchWorker.start({
    entry: ctx.workerEntry,
    name: `${ctx.runId}-${key}`,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    nodeFlags: [`--max-old-space-size=${heapMb}`],
    env: workerEnv(ctx, key, [backlog]),
  });
  let drained = false;
  try {
    drained = await w.waitForDone(n, capMs);
  } catch {
    // It exited: out of memory, most likely. The exit code says.
  }
  const { rate } = drainRate(w, n);
  const exit = await w.stop(10_000);
  await deleteIndices([ctx.res.name(`${key}-events`), ctx.res.name(`${key}-profiles`)]);
  return {
    heapMb,
    rate,
    drained,
    peakRssMb: w.peakRssMb(),
    exit,
    memory: w.memoryAtPeak(),
    peakInFlight: Math.max(0, ...w.samples.map((x) => x.inFlight)),
  };
}

/** One worker drains the backlog into its own indices, which are deleted afterwards. */
export async function drainOnce(
  ctx: Ctx,
  key: string,
  backlog: string,
  n: number,
  capMs: number,
  env: Record<string, string> = {},
): Promise<DrainResult> {
  const w = await BenchWorker.start({
    entry: ctx.workerEntry,
    name: `${ctx.runId}-${key}`,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    env: { ...workerEnv(ctx, key, [backlog]), ...env },
  });
  let drained = false;
  try {
    drained = await w.waitForDone(n, capMs);
  } finally {
    await w.stop(10_000);
  }
  const { rate } = drainRate(w, n);
  await deleteIndices([ctx.res.name(`${key}-events`), ctx.res.name(`${key}-profiles`)]);
  return { rate, drained, peakRssMb: w.peakRssMb() };
}
