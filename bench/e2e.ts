/**
 * Benchmarks 3-5 on the real local stack (Kafka, Elasticsearch, Redis), with the same documents
 * for every contender:
 *
 *   3. end to end: the ceiling (a loader straight to `_bulk`, best batch size and concurrency it
 *      finds), the naive consumer (kafkajs eachMessage, one request per message) and the worker
 *      as shipped (`node dist/cli/main.js worker`), each draining the same pre-produced backlog;
 *      then the worker's produce-to-indexed latency at 50% of its own drain rate, and its peak RSS.
 *   4. the batch-size sweep: the worker with BATCH_MAX from 50 to 2,000, throughput and latency
 *      at the same offered load.
 *   5. a burst at 10× the sustainable rate for 30 s: where the backlog grows, and how long it
 *      takes to drain.
 *
 * Every name (topics, indices, consumer groups, Redis keys) carries this run's id, and all of
 * it is deleted at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { barChart, lineChart } from '../harness/plot.js';
import { type GraphSettings, loadConfig } from '../src/config/config.js';
import { describeWorkload, planWorkload, workloadRecords } from '../src/generator/workload.js';
import { SINK_STAGES, type SinkStage } from '../src/metrics/metric-labels.js';
import type { IngestMessage } from '../src/model/message.js';
import { UNCOMMITTED_PER_HIGH_WATER } from '../src/pushback/intake/marks.js';
import { type CeilingResult, createIndices, deleteIndices, runCeiling, sampleCpu } from './lib/ceiling.js';
import { documentOf } from './lib/documents.js';
import { drainRate } from './lib/drain.js';
import {
  type Buckets,
  bucketsBetween,
  histogramBuckets,
  observations,
  quantile,
  shareWithin,
} from './lib/histograms.js';
import { type LatencyResult, measureLatency } from './lib/latency.js';
import { producePaced } from './lib/paced.js';
import { type ProfileSummary, summarizeProfileFile } from './lib/profile.js';
import type { Section, Table, Target } from './lib/report.js';
import {
  ensureStack,
  esClient,
  kafkaClient,
  produceAll,
  RunResources,
  redisClient,
  sleep,
  stackPids,
} from './lib/stack.js';
import { fmt, type Summary, summarize } from './lib/stats.js';
import {
  BenchWorker,
  cpuBetween,
  cpuProfileOf,
  type MemoryBreakdown,
  type WorkerMetricsSample,
} from './lib/worker.js';
import { benchWorkerEnv } from './lib/worker-env.js';

export interface EndToEndOptions {
  readonly quick: boolean;
  readonly resultsDir: string;
  /** Which of 'e2e', 'sweep', 'burst' to run ('e2e' always runs first: the others need its rate). */
  readonly only: ReadonlySet<string>;
  /** performance.now() by which everything should be done (the burst's drain wait is capped by it). */
  readonly deadline: number;
  readonly cores: number;
  readonly log: (line: string) => void;
  /** How to start the worker (see BenchWorker). */
  readonly workerEntry?: readonly string[];
}

/** The targets: p99 at half load with the shipped defaults, peak RSS through the burst. */
const P99_TARGET_MS = 250;
const RSS_TARGET_MB = 256;
const SWEEP = [50, 100, 200, 500, 1000, 2000];
const QUICK_SWEEP = [100, 2000];
const CLIENTS = 10_000;

interface Ctx extends EndToEndOptions {
  readonly runId: string;
  readonly res: RunResources;
  readonly kafka: ReturnType<typeof kafkaClient>;
  readonly pids: Record<string, number | undefined>;
  readonly defaults: GraphSettings;
  readonly logDir: string;
  readonly profDir: string;
}

// ------------------------------------------------------------------ the naive consumer

interface NaiveResult {
  readonly count: number;
  readonly ms: number;
  readonly rate: number;
  readonly series: { t: number; done: number }[];
  readonly cpu: ReturnType<typeof cpuBetween>;
}

async function runNaive(ctx: Ctx, topic: string, durationMs: number): Promise<NaiveResult> {
  const names = await createIndices(ctx, 'naive');
  const es = esClient();
  const consumer = ctx.kafka.consumer({ groupId: ctx.res.name('naive') });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let count = 0;
  let first: number | undefined;
  const series: { t: number; done: number }[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => {
      const m = JSON.parse(message.value!.toString('utf8')) as IngestMessage;
      if (m.type === 'event') {
        try {
          await es.create({
            index: names.events,
            id: m.id,
            document: { clientId: m.clientId, name: m.name, ts: m.ts, data: m.data },
          });
        } catch (err) {
          if ((err as { meta?: { statusCode?: number } }).meta?.statusCode !== 409) throw err;
        }
      } else {
        await es.index({
          index: names.profiles,
          id: m.clientId,
          document: { clientId: m.clientId, version: m.version, data: m.data },
        });
      }
      first ??= performance.now();
      count++;
      if (count % 50 === 0) series.push({ t: performance.now() - first, done: count });
    },
  });
  while (first === undefined) await sleep(50);
  const before = await sampleCpu(ctx);
  await sleep(durationMs);
  const after = await sampleCpu(ctx);
  const n = count;
  const ms = performance.now() - first;
  await consumer.disconnect();
  await es.close();
  await deleteIndices([names.events, names.profiles]);
  return { count: n, ms, rate: (n * 1000) / ms, series, cpu: cpuBetween(before, after, ctx.cores) };
}

// ------------------------------------------------------------------ the worker

interface WorkerPoint {
  readonly batchMax: number;
  readonly drained: boolean;
  readonly drainDone: number;
  readonly drainMs: number;
  readonly rate: number;
  readonly latency?: LatencyResult & {
    summary: Summary;
    offered: number;
    /** The latency run's time 0 on the worker's sample clock (`WorkerMetricsSample.t`). */
    sampleTimeOfStart: number;
  };
  /** The same phase in the worker's own histograms: every record, not a sample. */
  readonly ownView?: OwnView;
  readonly peakRssMb: number;
  readonly drainSamples: WorkerMetricsSample[];
  readonly liveSamples: WorkerMetricsSample[];
  readonly cpu: ReturnType<typeof cpuBetween>;
  /** CPU by process during the latency phase (half load). */
  readonly liveCpu: ReturnType<typeof cpuBetween> | undefined;
  readonly outcomes: Record<string, number>;
  readonly notes: string[];
  readonly memory: MemoryBreakdown | undefined;
}

/**
 * The worker's histograms over the latency phase: its `ts` → indexed latency of every record
 * (the target's own definition; `ts` is the planned send time, so the producer's send counts,
 * the bench's mark and poll do not), and its `_bulk` requests' durations: what is
 * Elasticsearch's share of the tail.
 */
interface OwnView {
  readonly indexed: Buckets;
  readonly bulk: Buckets;
  /** The same latency split at the fetch: Kafka's part (`ts` → fetched) and the worker's (→ indexed). */
  readonly kafka: Buckets;
  readonly worker: Buckets;
  /** Each call of the graph's stages on Redis and Elasticsearch. */
  readonly stages: ReadonlyMap<SinkStage, Buckets>;
}

function ownViewBetween(before: string | undefined, after: string | undefined): OwnView | undefined {
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

function workerEnv(ctx: Ctx, key: string, topics: string[], batchMax?: number): Record<string, string> {
  return {
    ...benchWorkerEnv(ctx.res, key, topics),
    ...(batchMax !== undefined && batchMax !== ctx.defaults.batchMax ? { BATCH_MAX: String(batchMax) } : {}),
  };
}

async function runWorkerPoint(
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
async function profileWorker(
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

interface HeapDiagnosis {
  readonly heapMb: number;
  readonly rate: number;
  readonly drained: boolean;
  readonly peakRssMb: number;
  readonly exit: number | string;
  readonly memory: MemoryBreakdown | undefined;
  readonly peakInFlight: number;
}

/**
 * Is the RSS live data or garbage V8 has not collected yet? The same drain with the old space
 * capped: if it still runs, the live set fits under the cap, and the rest of the RSS was heap
 * V8 grew instead of collecting (at the price of more GC).
 */
async function diagnoseHeap(
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
async function drainOnce(
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

interface DrainResult {
  readonly rate: number;
  readonly drained: boolean;
  readonly peakRssMb: number;
}

// ------------------------------------------------------------------ the burst

interface BurstResult {
  readonly durationMs: number;
  readonly offered: number;
  /** Records the 10× plan holds; what the producer could not send within the burst is not sent. */
  readonly planned: number;
  readonly achieved: number;
  readonly sent: number;
  readonly burstMs: number;
  readonly backlogAtEnd: number;
  readonly drained: boolean;
  readonly drainMs: number;
  readonly peakRssMb: number;
  readonly peakInFlight: number;
  readonly samples: WorkerMetricsSample[];
  readonly produced: { t: number; sent: number }[];
  readonly burstStartT: number;
  readonly burstEndT: number;
  readonly producerMaxLagMs: number;
  readonly memory: MemoryBreakdown | undefined;
}

async function runBurst(
  ctx: Ctx,
  sustainable: number,
  durationMs: number,
  drainCapMs: number,
): Promise<BurstResult> {
  const key = 'burst';
  const topic = ctx.res.name('burst');
  await ctx.res.createTopic(topic);
  const w = await BenchWorker.start({
    entry: ctx.workerEntry,
    name: `${ctx.runId}-${key}`,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    env: workerEnv(ctx, key, [topic]),
  });
  try {
    // Let the worker join and idle briefly, so the plot shows its resting memory first.
    await sleep(4_000);
    const offered = sustainable * 10;
    const workload = {
      seed: 99,
      ratePerSec: offered,
      durationMs,
      clients: CLIENTS,
      duplicateShare: 0.01,
      poisonShare: 0,
    };
    const planned = describeWorkload(workload).total;
    const startT = performance.now() - w.spawnedAt;
    const p = await producePaced(ctx.kafka, topic, workloadRecords(workload), {
      tickMs: 20,
      chunk: 1000,
      inFlight: 6,
      stopAtMs: durationMs,
    });
    const endT = performance.now() - w.spawnedAt;
    const doneAtEnd = w.last?.done ?? 0;
    const drained = await w.waitForDone(p.sent, drainCapMs);
    const drainedAt = w.timeOfDone(p.sent);
    const samples = [...w.samples];
    await w.stop(10_000);
    return {
      durationMs,
      offered,
      planned,
      achieved: p.rate,
      sent: p.sent,
      burstMs: p.ms,
      backlogAtEnd: p.sent - doneAtEnd,
      drained,
      drainMs: drained && drainedAt !== undefined ? drainedAt - endT : Number.NaN,
      peakRssMb: w.peakRssMb(),
      peakInFlight: Math.max(0, ...samples.map((s) => s.inFlight)),
      samples,
      produced: p.series.map((s) => ({ t: s.t + startT, sent: s.sent })),
      burstStartT: startT,
      burstEndT: endT,
      producerMaxLagMs: p.maxLagMs,
      memory: w.memoryAtPeak(),
    };
  } finally {
    await w.stop(3_000).catch(() => undefined);
    await deleteIndices([ctx.res.name(`${key}-events`), ctx.res.name(`${key}-profiles`)]);
  }
}

// ------------------------------------------------------------------ helpers for the report

/** Records done per second over time, from cumulative samples, in 1 s steps. */
function rateSeries(points: readonly { t: number; done: number }[], stepMs = 1_000): [number, number][] {
  const out: [number, number][] = [];
  if (points.length < 2) return out;
  let j = 0;
  const t0 = points[0]!.t;
  for (let t = t0 + stepMs; t <= points.at(-1)!.t + 1e-9; t += stepMs) {
    const at = (time: number) => {
      while (j + 1 < points.length && points[j + 1]!.t <= time) j++;
      return points[j]!.done;
    };
    const k = j;
    const a = at(t - stepMs);
    j = k;
    const b = at(t);
    out.push([(t - t0) / 1000, ((b - a) * 1000) / stepMs]);
  }
  return out;
}

const cpuText = (cpu: ReturnType<typeof cpuBetween>) =>
  cpu
    .filter((c) => Number.isFinite(c.cores))
    .map((c) => `${c.name} ${fmt(c.cores, 2)}`)
    .join(', ');

const latencyCell = (l: WorkerPoint['latency'], p: 'p50' | 'p99') => {
  if (!l) return 'n/a';
  const missingShare = l.missing / Math.max(1, l.sampled);
  // Samples never seen within the wait are later than anything measured: a p99 with >1% missing is a lower bound.
  if (p === 'p99' && missingShare > 0.01) return `> ${fmt(l.summary.max, 0)}`;
  if (p === 'p50' && missingShare > 0.5) return `> ${fmt(l.summary.max, 0)}`;
  return fmt(l.summary[p], 0);
};

// ------------------------------------------------------------------ the benchmarks

export async function endToEndBenchmarks(opts: EndToEndOptions): Promise<Section[]> {
  await ensureStack();
  const runId = `bench-${new Date().toISOString().slice(0, 16).replace(/[-:T]/g, '')}-${randomBytes(2).toString('hex')}`;
  const kafka = kafkaClient('rxingest-bench');
  const logDir = join(opts.resultsDir, 'logs');
  const profDir = join(opts.resultsDir, 'profiles');
  // Logs and profiles of the previous run go: bench/results holds the latest run only.
  rmSync(logDir, { recursive: true, force: true });
  rmSync(profDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  mkdirSync(profDir, { recursive: true });
  const ctx: Ctx = {
    ...opts,
    runId,
    res: new RunResources(runId, kafka),
    kafka,
    pids: await stackPids(),
    defaults: loadConfig({}).graph,
    logDir,
    profDir,
  };
  const sections: Section[] = [];
  try {
    sections.push(...(await runAll(ctx)));
  } finally {
    opts.log('  cleaning up the run’s topics, indices, groups and Redis keys …');
    const problems = await ctx.res.cleanUp();
    if (problems.length > 0) opts.log(`  clean-up problems: ${problems.join('; ')}`);
  }
  return sections;
}

async function runAll(ctx: Ctx): Promise<Section[]> {
  const { quick, log } = ctx;
  const n = quick ? 20_000 : 150_000;
  const sections: Section[] = [];

  // The backlog: the same documents for everyone.
  const plan = planWorkload({
    seed: 42,
    count: n,
    ratePerSec: 5_000,
    clients: CLIENTS,
    duplicateShare: 0.01,
    poisonShare: 0,
  });
  const backlog = ctx.res.name('backlog');
  await ctx.res.createTopic(backlog, 8);
  const produced = await produceAll(ctx.kafka, backlog, plan);
  log(
    `  backlog: ${fmt(produced.count, 0)} messages in ${backlog} (${fmt((produced.count * 1000) / produced.ms, 0)}/s)`,
  );
  const docs = plan.map(documentOf);
  const avgBytes = plan.reduce((a, r) => a + (r.value?.length ?? 0) + (r.key?.length ?? 0), 0) / plan.length;

  log('  ceiling: straight to _bulk …');
  const ceiling = await runCeiling(ctx, docs);
  log(
    `  ceiling: ${fmt(ceiling.rate, 0)} docs/s (batch ${ceiling.best.batch}, ${ceiling.best.concurrency} in flight)`,
  );

  const naiveMs = quick ? 8_000 : 20_000;
  log(`  naive consumer: ${naiveMs / 1000} s …`);
  const naive = await runNaive(ctx, backlog, naiveMs);
  log(`  naive: ${fmt(naive.rate, 0)} docs/s`);

  const drainCapMs = quick ? 20_000 : 45_000;
  // An unmeasured worker drain first, as in the pinned bench: on a stack started for the run
  // the first worker pays the servers' JIT, which made the first point of a run look far slower
  // than the same settings a minute later.
  log('  warming the stack up: one unmeasured worker drain …');
  const warmUp = await drainOnce(ctx, 'wwarm', backlog, n, quick ? 30_000 : 90_000);
  log(`    warm-up ${fmt(warmUp.rate, 0)} docs/s (not a point)`);
  log(
    `  worker as shipped (BATCH_MAX=${ctx.defaults.batchMax}): drain ${fmt(n, 0)}, then latency at half its rate …`,
  );
  const shipped = await runWorkerPoint(ctx, {
    batchMax: ctx.defaults.batchMax,
    backlog,
    n,
    drainCapMs: quick ? 30_000 : 90_000,
    latencyMs: quick ? 6_000 : 30_000,
    seed: 1000,
  });
  log(
    `  worker: ${fmt(shipped.rate, 0)} docs/s; latency at ${fmt(shipped.latency?.offered ?? 0, 0)}/s: ` +
      `p50 ${latencyCell(shipped.latency, 'p50')} ms, p99 ${latencyCell(shipped.latency, 'p99')} ms; peak RSS ${fmt(shipped.peakRssMb, 0)} MB`,
  );
  if (shipped.ownView) {
    const { indexed, bulk, kafka, worker } = shipped.ownView;
    const p99 = (b: Buckets) => fmt(quantile(b, 0.99) * 1000, 0);
    log(
      `  worker's own histograms, same phase: ${fmt(shareWithin(indexed, 0.25) * 100, 1)}% of ${fmt(observations(indexed), 0)} ` +
        `records indexed within 250 ms of their ts (p99 ≈ ${p99(indexed)} ms: ts → fetched ≈ ${p99(kafka)}, fetched → indexed ≈ ${p99(worker)}); ` +
        `${fmt(shareWithin(bulk, 0.05) * 100, 1)}% of ${fmt(observations(bulk), 0)} _bulk requests within 50 ms`,
    );
  }

  log('  worker with recent profiles (PROFILE_CACHE_SIZE=20000): drain …');
  // The worker as shipped but with recent profiles on: profiles written lately are updated without a read first.
  const recentOn = await drainOnce(ctx, 'wrecent', backlog, n, quick ? 30_000 : 90_000, {
    PROFILE_CACHE_SIZE: '20000',
  });
  log(`  worker with recent profiles: ${fmt(recentOn.rate, 0)} docs/s`);

  const workerCeiling = shipped.rate / ceiling.rate;
  const workerNaive = shipped.rate / naive.rate;
  let profile: ProfileSummary | undefined;
  let sweepPoints: WorkerPoint[] = [];
  let burst: BurstResult | undefined;

  if (ctx.only.has('sweep')) {
    const sizes = (quick ? QUICK_SWEEP : SWEEP).filter((b) => b !== ctx.defaults.batchMax);
    for (const b of sizes) {
      log(`  sweep: BATCH_MAX=${b} …`);
      const p = await runWorkerPoint(ctx, {
        batchMax: b,
        backlog,
        n,
        drainCapMs,
        offered: shipped.rate / 2,
        latencyMs: quick ? 5_000 : 15_000,
        seed: 1000 + b,
      });
      log(`    ${fmt(p.rate, 0)} docs/s; p99 ${latencyCell(p.latency, 'p99')} ms`);
      sweepPoints.push(p);
    }
    sweepPoints = [...sweepPoints, shipped].sort((a, b) => a.batchMax - b.batchMax);
  }

  if (ctx.only.has('burst')) {
    const burstMs = quick ? 5_000 : 30_000;
    const remaining = ctx.deadline - performance.now() - 45_000;
    const cap = Math.max(20_000, Math.min(quick ? 30_000 : 300_000, remaining - burstMs));
    log(
      `  burst: 10 × ${fmt(shipped.rate, 0)}/s for ${burstMs / 1000} s, then drain (waiting at most ${fmt(cap / 1000, 0)} s) …`,
    );
    burst = await runBurst(ctx, shipped.rate, burstMs, cap);
    log(
      `    sent ${fmt(burst.sent, 0)} at ${fmt(burst.achieved, 0)}/s; backlog at the end ${fmt(burst.backlogAtEnd, 0)}; ` +
        `drain ${burst.drained ? `${fmt(burst.drainMs / 1000, 1)} s` : 'not finished'}; peak RSS ${fmt(burst.peakRssMb, 0)} MB`,
    );
  }

  const rssPeak = Math.max(shipped.peakRssMb, burst?.peakRssMb ?? 0);
  const missed =
    workerCeiling < 0.9 ||
    workerNaive < 16 ||
    rssPeak >= RSS_TARGET_MB ||
    !(shipped.latency && shipped.latency.summary.p99 < P99_TARGET_MS);
  if (missed && ctx.deadline - performance.now() > 40_000) {
    log('  a target was missed: profiling the worker (node --cpu-prof) on a short drain …');
    profile = await profileWorker(ctx, backlog, n, quick ? 8_000 : 15_000);
  }
  let heap: HeapDiagnosis | undefined;
  if (rssPeak >= RSS_TARGET_MB && ctx.deadline - performance.now() > 45_000) {
    const heapMb = 192;
    log(
      `  RSS over ${RSS_TARGET_MB} MB: the same drain with --max-old-space-size=${heapMb} (a diagnosis, not the shipped config) …`,
    );
    heap = await diagnoseHeap(ctx, backlog, n, quick ? 10_000 : 25_000, heapMb);
    log(`    ${fmt(heap.rate, 0)} docs/s, peak RSS ${fmt(heap.peakRssMb, 0)} MB, exit ${heap.exit}`);
  }

  sections.push(
    endToEndSection(ctx, {
      n,
      ceiling,
      naive,
      shipped,
      recentOn,
      warmUp,
      workerCeiling,
      workerNaive,
      profile,
      burst,
      heap,
    }),
  );
  if (ctx.only.has('sweep')) sections.push(sweepSection(ctx, sweepPoints, shipped));
  if (burst) sections.push(burstSection(ctx, burst, shipped, avgBytes));
  return sections;
}

// ------------------------------------------------------------------ sections

const mb = (bytes: number) => fmt(bytes / 2 ** 20, 0);

function memoryNote(what: string, m: MemoryBreakdown | undefined): string[] {
  if (!m) return [];
  const other = m.rss - m.heapTotal - m.external;
  return [
    `Worker memory at its peak RSS (${what}, process.memoryUsage() from a preloaded probe): RSS ${mb(m.rss)} MB = V8 heap ` +
      `${mb(m.heapTotal)} MB (of which in use at that moment, live data and garbage not yet collected, ${mb(m.heapUsed)} MB) + off-heap buffers ${mb(m.external)} MB ` +
      `(array buffers ${mb(m.arrayBuffers)} MB) + code, stacks and the rest ${mb(Math.max(0, other))} MB.`,
  ];
}

function endToEndSection(
  ctx: Ctx,
  r: {
    n: number;
    ceiling: CeilingResult;
    naive: NaiveResult;
    shipped: WorkerPoint;
    recentOn: DrainResult;
    warmUp: DrainResult;
    workerCeiling: number;
    workerNaive: number;
    profile: ProfileSummary | undefined;
    burst: BurstResult | undefined;
    heap: HeapDiagnosis | undefined;
  },
): Section {
  const { ceiling, naive, shipped } = r;
  const lat = shipped.latency;
  const rssPeak = Math.max(shipped.peakRssMb, r.burst?.peakRssMb ?? 0);
  const targets: Target[] = [
    { name: 'worker/ceiling', target: '≥ 0.9', value: fmt(r.workerCeiling, 2), pass: r.workerCeiling >= 0.9 },
    { name: 'worker/naive', target: '≥ 16', value: fmt(r.workerNaive, 1), pass: r.workerNaive >= 16 },
    {
      name: 'worker p99 produce→indexed at 50% of its max rate',
      target: `< ${P99_TARGET_MS} ms`,
      value: `${latencyCell(lat, 'p99')} ms`,
      pass: lat
        ? lat.summary.p99 < P99_TARGET_MS && lat.missing / Math.max(1, lat.sampled) <= 0.01
        : undefined,
    },
    {
      name: 'worker peak RSS (all runs of the shipped config, burst included)',
      target: `< ${RSS_TARGET_MB} MB`,
      value: `${fmt(rssPeak, 0)} MB`,
      pass: rssPeak < RSS_TARGET_MB,
    },
  ];
  const rows = [
    [
      'ceiling: _bulk loader',
      fmt(ceiling.rate, 0),
      fmt(ceiling.rate / shipped.rate, 2),
      `batch ${ceiling.best.batch}, ${ceiling.best.concurrency} in flight; no Kafka, no dedup, profiles overwritten`,
    ],
    [
      'worker, as shipped',
      fmt(shipped.rate, 0),
      '1.00',
      `BATCH_MAX=${shipped.batchMax}, 8 partitions${shipped.drained ? '' : ' (did not drain in time)'}`,
    ],
    [
      'worker, recent profiles on (PROFILE_CACHE_SIZE=20000)',
      fmt(r.recentOn.rate, 0),
      fmt(r.recentOn.rate / shipped.rate, 2),
      `profiles written lately updated without a read first; peak RSS ${fmt(r.recentOn.peakRssMb, 0)} MB${r.recentOn.drained ? '' : ' (did not drain in time)'}`,
    ],
    [
      'naive: eachMessage, 1 request/message',
      fmt(naive.rate, 0),
      fmt(naive.rate / shipped.rate, 3),
      `${fmt(naive.count, 0)} messages in ${fmt(naive.ms / 1000, 1)} s, then stopped`,
    ],
  ];
  const tables: Table[] = [
    { head: ['contender', 'docs/s', 'vs worker', 'how'], rows },
    {
      title: 'Ratios',
      head: ['ratio', 'value'],
      rows: [
        ['worker/ceiling', fmt(r.workerCeiling, 2)],
        ['worker/naive', fmt(r.workerNaive, 1)],
      ],
    },
  ];
  if (lat) {
    tables.push({
      title: `Worker latency, produce → indexed, at ${fmt(lat.offered, 0)} msg/s offered (50% of its drain rate) for ${fmt(lat.produced / lat.offered, 0)} s`,
      head: [
        'samples',
        'missing',
        'p50 ms',
        'p90 ms',
        'p99 ms',
        'max ms',
        'producer rate',
        'producer max lag ms',
      ],
      rows: [
        [
          fmt(lat.sampled, 0),
          fmt(lat.missing, 0),
          latencyCell(lat, 'p50'),
          fmt(lat.summary.p90, 0),
          latencyCell(lat, 'p99'),
          fmt(lat.summary.max, 0),
          fmt(lat.producedRate, 0),
          fmt(lat.producerMaxLagMs, 0),
        ],
      ],
    });
    const windows = latencyWindows(lat.latencies, lat.sentAt, 5_000);
    const cpuIn = (fromMs: number, name: string) => {
      const from = lat.sampleTimeOfStart + fromMs;
      const within = shipped.liveSamples.filter((x) => x.t >= from && x.t <= from + 5_000);
      if (within.length < 2) return '–';
      const cores = cpuBetween(within[0]!, within.at(-1)!, ctx.cores).find((c) => c.name === name)?.cores;
      return cores === undefined ? '–' : fmt(cores, 2);
    };
    const loopLagIn = (fromMs: number) => {
      const from = lat.sampleTimeOfStart + fromMs;
      const lags = shipped.liveSamples
        .filter((x) => x.t > from && x.t <= from + 5_000 && Number.isFinite(x.loopLagMaxMs))
        .map((x) => x.loopLagMaxMs);
      return lags.length === 0 ? '–' : fmt(Math.max(...lags), 0);
    };
    tables.push({
      title:
        'The same latency by when the message was sent (5-s windows), with the cores each process used then: where the tail comes from',
      head: [
        'sent at s',
        'samples',
        'p50 ms',
        'p99 ms',
        'max ms',
        'worker',
        'elasticsearch',
        'kafka',
        'worker loop held, max ms',
      ],
      rows: windows.map((w) => [
        `${fmt(w.fromMs / 1000, 0)}–${fmt((w.fromMs + 5_000) / 1000, 0)}`,
        fmt(w.summary.count, 0),
        fmt(w.summary.p50, 0),
        fmt(w.summary.p99, 0),
        fmt(w.summary.max, 0),
        cpuIn(w.fromMs, 'worker'),
        cpuIn(w.fromMs, 'elasticsearch'),
        cpuIn(w.fromMs, 'kafka'),
        loopLagIn(w.fromMs),
      ]),
    });
    if (shipped.ownView) tables.push(ownViewTable(lat, shipped.ownView));
  }
  const coresOf = (cpu: ReturnType<typeof cpuBetween> | undefined, name: string) =>
    cpu?.find((c) => c.name === name)?.cores ?? Number.NaN;
  const usPerDoc = (cores: number, rate: number) => fmt((cores / rate) * 1e6, 0);
  tables.push({
    title: `CPU use (cores, of ${ctx.cores}) and CPU per document (µs)`,
    head: ['phase', 'CPU by process', 'client µs/doc', 'Elasticsearch µs/doc'],
    rows: [
      [
        'ceiling, loading',
        cpuText(ceiling.cpu),
        usPerDoc(coresOf(ceiling.cpu, 'bench (this process)'), ceiling.rate),
        usPerDoc(coresOf(ceiling.cpu, 'elasticsearch'), ceiling.rate),
      ],
      [
        'worker, draining',
        cpuText(shipped.cpu),
        usPerDoc(coresOf(shipped.cpu, 'worker'), shipped.rate),
        usPerDoc(coresOf(shipped.cpu, 'elasticsearch'), shipped.rate),
      ],
      ...(shipped.liveCpu && lat
        ? [
            [
              'worker, at half load',
              cpuText(shipped.liveCpu),
              usPerDoc(coresOf(shipped.liveCpu, 'worker'), lat.offered),
              usPerDoc(coresOf(shipped.liveCpu, 'elasticsearch'), lat.offered),
            ],
          ]
        : []),
      [
        'naive, draining',
        cpuText(naive.cpu),
        usPerDoc(coresOf(naive.cpu, 'bench (this process)'), naive.rate),
        usPerDoc(coresOf(naive.cpu, 'elasticsearch'), naive.rate),
      ],
    ],
  });
  if (r.profile) {
    tables.push({
      title:
        'Worker CPU profile (node --cpu-prof; the drain only, start-up and shutdown left out): top self time',
      head: ['function', 'where', 'self ms', 'share'],
      rows: r.profile.functions
        .slice(0, 12)
        .map((f) => [f.name, f.where, fmt(f.ms, 0), `${fmt(f.share * 100, 1)}%`]),
    });
  }
  const esShare = (cpu: ReturnType<typeof cpuBetween>) =>
    cpu.find((c) => c.name === 'elasticsearch')?.cores ?? Number.NaN;
  const workerCores = shipped.cpu.find((c) => c.name === 'worker')?.cores ?? Number.NaN;
  const notes = [
    `${fmt(r.n, 0)} messages (10,000 clients, 30% profile updates, 1% re-sent ids, no poison) produced once to an 8-partition topic; ` +
      "every contender writes the same documents into its own fresh pair of indices (the worker's mappings). The ceiling sends the " +
      'documents from memory; the naive consumer and the worker read them from Kafka. Documents/s for the worker is the drain rate from ' +
      'its first finished record to its last (start-up excluded); the naive consumer is stopped after a fixed time.',
    `Before the worker's points, one worker drained the backlog unmeasured (${fmt(r.warmUp.rate, 0)} docs/s), so that the servers' JIT was warm.`,
    `The ceiling tried ${ceiling.trials.map((t) => `${t.batch}×${t.concurrency}`).join(', ')} (batch × in flight) on ` +
      `${fmt(ctx.quick ? 6_000 : 25_000, 0)} documents and loaded everything with the best.`,
    `Where the time goes (worker/ceiling): this machine has ${ctx.cores} cores for everything. The worker is one Node process, and ` +
      `while draining it used ${fmt(workerCores, 2)} cores (its JS thread plus GC helpers), ` +
      `${usPerDoc(workerCores, shipped.rate)} µs of CPU per document: that alone caps it near ` +
      `${fmt(shipped.rate / Math.max(workerCores, 0.01), 0)} docs/s per core, whatever Elasticsearch can take. The loader needs ` +
      `${usPerDoc(coresOf(ceiling.cpu, 'bench (this process)'), ceiling.rate)} µs per document (serializing the bulk body). Elasticsearch ` +
      `itself spends ${usPerDoc(esShare(shipped.cpu), shipped.rate)} µs per document for the worker's writes against ` +
      `${usPerDoc(esShare(ceiling.cpu), ceiling.rate)} µs for the loader's, because a profile update is a read (mget) and a conditional ` +
      'write rather than a blind index. On a bigger box the worker would scale with partitions across processes; ' +
      'on 2 shared cores the ceiling is out of reach by design.',
    'Latency is measured from the planned send time to the moment a poller (every ' +
      `${lat?.pollMs ?? 20} ms) sees the id's processed-mark in Redis, which the worker writes right after Elasticsearch acknowledged the document ` +
      '(polling Elasticsearch with real-time GETs would force refreshes and change the result). One message in ~20 is sampled.',
    `Peak RSS is VmHWM of the worker process (node dist/cli/main.js). During the drain the worker held up to ${fmt(
      Math.max(...shipped.drainSamples.map((s) => s.inFlight)),
      0,
    )} records taken in and not yet committed: each partition pauses at HIGH_WATER=${ctx.defaults.highWater} records in its graph (or ${UNCOMMITTED_PER_HIGH_WATER} × that not yet committed), and the fetch already ` +
      'under way (up to 1 MiB per partition in kafkajs) still comes in.',
  ];
  notes.push(...memoryNote('draining, then at half load', shipped.memory));
  if (r.heap) {
    const h = r.heap;
    tables.push({
      title: 'Memory diagnosis: the same drain with the V8 old space capped (not the shipped config)',
      head: ['run', 'docs/s', 'peak RSS MB', 'peak records in worker', 'drained', 'exit'],
      rows: [
        [
          'worker as shipped',
          fmt(shipped.rate, 0),
          fmt(shipped.peakRssMb, 0),
          fmt(Math.max(...shipped.drainSamples.map((x) => x.inFlight)), 0),
          shipped.drained ? 'yes' : 'no',
          '0',
        ],
        [
          `--max-old-space-size=${h.heapMb}`,
          fmt(h.rate, 0),
          fmt(h.peakRssMb, 0),
          fmt(h.peakInFlight, 0),
          h.drained ? 'yes' : 'no',
          String(h.exit),
        ],
      ],
    });
    notes.push(
      h.drained
        ? `With the old space capped at ${h.heapMb} MB the same drain still completes (peak RSS ${fmt(h.peakRssMb, 0)} MB, ` +
            `${fmt(h.rate / shipped.rate, 2)}× the shipped rate): the records in flight fit in that heap, and most of the shipped worker's RSS ` +
            'is heap V8 grows instead of collecting; capping it trades memory for GC time.'
        : `With the old space capped at ${h.heapMb} MB the drain did not complete (exit ${h.exit}): the live set of ` +
            `~${fmt(h.peakInFlight, 0)} records in flight does not fit, so the RSS is mostly live data, bounded by the records the worker holds.`,
      ...memoryNote(`--max-old-space-size=${h.heapMb}`, h.memory),
    );
  }
  if (r.profile) {
    notes.push(
      'Worker profile, self time by origin: ' +
        r.profile.origins
          .slice(0, 10)
          .map((o) => `${o.name} ${fmt(o.share * 100, 0)}%`)
          .join(', ') +
        ` (under bench/results/profiles/${ctx.runId}-wprof/).`,
    );
  }
  const startAt = Math.max(0, shipped.drainSamples.findIndex((s) => s.done > 0) - 1);
  const drainPoints = shipped.drainSamples.slice(startAt).map((s) => ({ t: s.t, done: s.done }));
  return {
    id: 'e2e',
    title: 'End to end on the real stack (Kafka → worker → Elasticsearch + Redis)',
    tables,
    targets,
    notes,
    plots: [
      {
        file: 'e2e-throughput.svg',
        title: 'End to end: documents/s over time',
        svg: lineChart({
          title: 'Documents/s over time, draining the same backlog',
          xLabel: 'seconds since the first document',
          yLabel: 'documents/s',
          series: [
            {
              name: 'ceiling (_bulk loader)',
              points: rateSeries([{ t: 0, done: 0 }, ...ceiling.series], 250),
            },
            { name: 'worker as shipped', points: rateSeries(drainPoints, 500) },
            { name: 'naive consumer', points: rateSeries([{ t: 0, done: 0 }, ...naive.series]) },
          ],
        }),
      },
      {
        file: 'e2e-docs-per-second.svg',
        title: 'End to end: documents/s',
        svg: barChart({
          title: 'Documents/s (log scale)',
          categories: ['ceiling', 'worker', 'naive'],
          series: [{ name: 'documents/s', values: [ceiling.rate, shipped.rate, naive.rate] }],
          unit: 'documents/s',
          yLog: true,
        }),
      },
      ...(lat
        ? [
            {
              file: 'e2e-latency.svg',
              title: 'End to end: latency at 50% load',
              svg: barChart({
                title: `Produce → indexed latency at ${fmt(lat.offered, 0)} msg/s (ms)`,
                categories: ['p50', 'p90', 'p99', 'p99.9', 'max'],
                series: [
                  {
                    name: 'worker as shipped',
                    values: [
                      lat.summary.p50,
                      lat.summary.p90,
                      lat.summary.p99,
                      lat.summary.p999,
                      lat.summary.max,
                    ],
                  },
                ],
                unit: 'ms',
              }),
            },
          ]
        : []),
    ],
    data: {
      n: r.n,
      ceiling: { ...ceiling, series: undefined },
      naive: { ...naive, series: undefined },
      worker: {
        ...shipped,
        drainSamples: undefined,
        liveSamples: undefined,
        latency: lat ? { ...lat, latencies: undefined, sentAt: undefined } : undefined,
      },
      profile: r.profile,
    },
  };
}

/** Latencies grouped by the send time of their message, one summary per window. */
const OWN_VIEW_BOUNDS_S = [0.05, 0.1, 0.25, 0.5] as const;

/**
 * The latency phase three ways, as shares within the same bounds: the bench's sample (planned
 * send → owner mark seen), the worker's `ts` → indexed for every record, and its `_bulk`
 * requests. p99 < 250 ms is a share of at least 99% within 250 ms.
 */
function ownViewTable(lat: NonNullable<WorkerPoint['latency']>, own: OwnView): Table {
  const pct = (share: number) => (Number.isNaN(share) ? '–' : `${fmt(share * 100, 1)}%`);
  const toAck = lat.latencies.map((ms, i) => ms - lat.afterAck[i]!);
  /** A sampled segment: its shares within the bounds, then its own p50 and p99. */
  const sampledRow = (what: string, values: readonly number[]) => {
    const within = (s: number) => values.filter((ms) => ms <= s * 1000).length / Math.max(1, values.length);
    const { p50, p99 } = summarize([...values]);
    return [
      what,
      fmt(values.length, 0),
      ...OWN_VIEW_BOUNDS_S.map((s) => pct(within(s))),
      fmt(p50, 0),
      fmt(p99, 0),
    ];
  };
  /** A histogram of the worker's: its shares, and p50 / p99 estimated within their buckets (≈). */
  const histogramRow = (what: string, b: Buckets) => {
    const estimate = (q: number) => {
      const v = quantile(b, q);
      return Number.isNaN(v) ? '–' : `≈ ${fmt(v * 1000, 0)}`;
    };
    return [
      what,
      fmt(observations(b), 0),
      ...OWN_VIEW_BOUNDS_S.map((s) => pct(shareWithin(b, s))),
      estimate(0.5),
      estimate(0.99),
    ];
  };
  const stageRows = [...own.stages]
    .filter(([, b]) => observations(b) > 0)
    .map(([stage, b]) => histogramRow(`    ${stage}, per call (rxingest_stage_duration_seconds)`, b));
  const late = lat.startLateMs > 0 ? `, ts ${fmt(lat.startLateMs, 0)} ms before its planned send` : '';
  return {
    title:
      'The same phase by segment, as shares within a bound: the bench’s sample, the worker’s own histograms (every record)',
    head: [
      'measured',
      'count',
      ...OWN_VIEW_BOUNDS_S.map((s) => `≤ ${fmt(s * 1000, 0)} ms`),
      'p50 ms',
      'p99 ms',
    ],
    rows: [
      sampledRow('bench: planned send → owner mark seen (sampled)', lat.latencies),
      sampledRow('  planned send → producer acknowledged', toAck),
      sampledRow('  acknowledged → owner mark seen (Kafka, worker, Elasticsearch, poll)', lat.afterAck),
      histogramRow(`worker: message ts → indexed (rxingest_e2e_latency_seconds)${late}`, own.indexed),
      histogramRow('  ts → fetched: the send, Kafka, the fetch (rxingest_record_latency_seconds)', own.kafka),
      histogramRow('  fetched → indexed: in the worker', own.worker),
      ...stageRows,
      histogramRow('    _bulk request (rxingest_es_request_duration_seconds)', own.bulk),
    ],
  };
}

function latencyWindows(
  latencies: readonly number[],
  sentAt: readonly number[],
  windowMs: number,
): { fromMs: number; summary: Summary }[] {
  const byWindow = new Map<number, number[]>();
  latencies.forEach((l, i) => {
    const w = Math.floor(sentAt[i]! / windowMs);
    const list = byWindow.get(w);
    if (list) list.push(l);
    else byWindow.set(w, [l]);
  });
  return [...byWindow.entries()]
    .sort(([a], [b]) => a - b)
    .map(([w, ls]) => ({ fromMs: w * windowMs, summary: summarize(ls) }));
}

function sweepSection(ctx: Ctx, points: WorkerPoint[], shipped: WorkerPoint): Section {
  const best = points.reduce((a, p) => (p.rate > a.rate ? p : a), points[0]!);
  const rows = points.map((p) => [
    String(p.batchMax) + (p.batchMax === ctx.defaults.batchMax ? ' (shipped)' : ''),
    fmt(p.rate, 0),
    fmt(p.rate / shipped.rate, 2),
    p.drained ? 'yes' : 'no',
    latencyCell(p.latency, 'p50'),
    latencyCell(p.latency, 'p99'),
    p.latency ? fmt(p.latency.missing, 0) : 'n/a',
    fmt(p.peakRssMb, 0),
    fmt(p.cpu.find((c) => c.name === 'worker')?.cores ?? Number.NaN, 2),
    fmt(p.liveCpu?.find((c) => c.name === 'worker')?.cores ?? Number.NaN, 2),
  ]);
  const offered = shipped.latency?.offered ?? Number.NaN;
  const notes = [
    `Each point: a fresh worker drains the same ${fmt(shipped.drainDone, 0)}-message backlog (fresh group and indices), then takes ` +
      `${fmt(offered, 0)} msg/s (half the shipped config's drain rate, the same load for every point) on a live topic for the latency. ` +
      'A point whose backlog did not drain in time is rated over the time it had, and its latency is measured by a second, fresh worker.',
    `Highest throughput: BATCH_MAX=${best.batchMax} (${fmt(best.rate, 0)} docs/s).`,
    ...points.flatMap((p) => p.notes),
  ];
  return {
    id: 'sweep',
    title: 'Batch-size sweep (BATCH_MAX)',
    tables: [
      {
        head: [
          'BATCH_MAX',
          'docs/s',
          'vs shipped',
          'drained',
          `p50 ms @${fmt(offered, 0)}/s`,
          `p99 ms @${fmt(offered, 0)}/s`,
          'missing samples',
          'peak RSS MB',
          'worker cores',
        ],
        rows,
      },
    ],
    targets: [],
    notes,
    plots: [
      {
        file: 'sweep-throughput.svg',
        title: 'Batch-size sweep: throughput',
        svg: lineChart({
          title: 'Worker throughput by BATCH_MAX (draining a backlog)',
          xLabel: 'BATCH_MAX (log scale)',
          yLabel: 'documents/s',
          xLog: true,
          dots: true,
          series: [{ name: 'documents/s', points: points.map((p) => [p.batchMax, p.rate] as const) }],
        }),
      },
      {
        file: 'sweep-latency.svg',
        title: 'Batch-size sweep: latency',
        svg: lineChart({
          title: `Produce → indexed latency by BATCH_MAX at ${fmt(offered, 0)} msg/s (log scale)`,
          xLabel: 'BATCH_MAX (log scale)',
          yLabel: 'ms',
          xLog: true,
          yLog: true,
          dots: true,
          series: [
            {
              name: 'p50',
              points: points
                .filter((p) => p.latency)
                .map((p) => [p.batchMax, p.latency!.summary.p50] as const),
            },
            {
              name: 'p99',
              points: points
                .filter((p) => p.latency)
                .map((p) => [p.batchMax, p.latency!.summary.p99] as const),
            },
          ],
          refs: [{ y: 250, label: 'p99 target 250 ms' }],
        }),
      },
    ],
    data: points.map((p) => ({
      batchMax: p.batchMax,
      rate: p.rate,
      drained: p.drained,
      latency: p.latency?.summary,
      missing: p.latency?.missing,
      peakRssMb: p.peakRssMb,
      cpu: p.cpu,
    })),
  };
}

function burstSection(ctx: Ctx, b: BurstResult, shipped: WorkerPoint, avgBytes: number): Section {
  const restRss = b.samples.find((s) => s.t >= b.burstStartT - 500)?.rssMb ?? Number.NaN;
  // A partition pauses at HIGH_WATER records in its graph or UNCOMMITTED_PER_HIGH_WATER × HIGH_WATER
  // not yet committed, but the fetch already under way (up to kafkajs' maxBytesPerPartition, 1 MiB)
  // still comes in: that is the bound on what the worker holds.
  const perFetch = Math.ceil(1_048_576 / avgBytes);
  const maxInFlightBound = (UNCOMMITTED_PER_HIGH_WATER * ctx.defaults.highWater + perFetch) * 8;
  const targets: Target[] = [
    {
      name: 'burst: RSS stays under the bound',
      target: `< ${RSS_TARGET_MB} MB`,
      value: `${fmt(b.peakRssMb, 0)} MB`,
      pass: b.peakRssMb < RSS_TARGET_MB,
    },
    {
      name: `burst: backlog stays in Kafka (records in the worker ≤ (${UNCOMMITTED_PER_HIGH_WATER} × HIGH_WATER + one 1 MiB fetch) × 8 partitions)`,
      target: `≤ ${fmt(maxInFlightBound, 0)}`,
      value: fmt(b.peakInFlight, 0),
      pass: b.peakInFlight <= maxInFlightBound,
    },
    {
      name: 'burst: drains afterwards',
      target: 'drained',
      value: b.drained
        ? `${fmt(b.drainMs / 1000, 1)} s`
        : `not within the wait (${fmt(b.sent - (b.samples.at(-1)?.done ?? 0), 0)} left)`,
      pass: b.drained,
    },
  ];
  const produced = b.produced;
  const producedAt = (t: number) => {
    let v = 0;
    for (const p of produced) if (p.t <= t) v = p.sent;
    return v;
  };
  const series = b.samples.map((s) => ({
    t: s.t / 1000,
    backlog: Math.max(0, producedAt(s.t) - s.done),
    inFlight: s.inFlight,
    rss: s.rssMb,
    done: s.done,
  }));
  const drainRate = b.drained ? b.backlogAtEnd / (b.drainMs / 1000) : Number.NaN;
  return {
    id: 'burst',
    title: 'Burst: 10× the sustainable rate',
    tables: [
      {
        head: [
          'offered msg/s',
          'achieved msg/s',
          'sent',
          'burst s',
          'backlog at end of burst',
          'time to drain s',
          'drain rate /s',
          'peak in worker',
          'RSS at rest MB',
          'peak RSS MB',
        ],
        rows: [
          [
            fmt(b.offered, 0),
            fmt(b.achieved, 0),
            fmt(b.sent, 0),
            fmt(b.burstMs / 1000, 1),
            fmt(b.backlogAtEnd, 0),
            b.drained ? fmt(b.drainMs / 1000, 1) : 'n/a',
            fmt(drainRate, 0),
            fmt(b.peakInFlight, 0),
            fmt(restRss, 0),
            fmt(b.peakRssMb, 0),
          ],
        ],
      },
    ],
    targets,
    notes: [
      `The sustainable rate is the shipped worker's drain rate from the end-to-end drain (${fmt(shipped.rate, 0)} msg/s); the burst offers 10× that from a ` +
        `paced producer with 6 sends in flight (it reached ${fmt(b.achieved, 0)} msg/s, ${fmt(b.achieved / shipped.rate, 1)}× the sustainable rate; ` +
        `its worst lag behind the plan was ${fmt(b.producerMaxLagMs / 1000, 1)} s: on ${ctx.cores} cores the producer, Kafka, the worker and Elasticsearch share the CPU).`,
      `The backlog (produced − done) grows in Kafka while the worker holds at most ${fmt(b.peakInFlight, 0)} records: each partition pauses at ` +
        `HIGH_WATER=${ctx.defaults.highWater} records in its graph or ${UNCOMMITTED_PER_HIGH_WATER} × that not yet committed, and the fetch already under way (≤ 1 MiB, ~${fmt(perFetch, 0)} messages of ` +
        `~${fmt(avgBytes, 0)} bytes) still comes in. Time to drain counts from the end of the burst until the last record is done.`,
      `The producer planned ${fmt(b.planned, 0)} messages for the burst and sent ${fmt(b.sent, 0)}: it stops taking new ones at ` +
        `${fmt(b.durationMs / 1000, 0)} s (what it could not send by then is dropped, so the burst lasts what it should); the sends ` +
        `still in flight were acknowledged by ${fmt(b.burstMs / 1000, 1)} s.`,
      ...memoryNote('burst', b.memory),
    ],
    plots: [
      {
        file: 'burst-backlog.svg',
        title: 'Burst: where the backlog is',
        svg: lineChart({
          title: 'Burst: backlog in Kafka vs records inside the worker',
          xLabel: 'seconds since the worker started',
          yLabel: 'records',
          series: [
            { name: 'backlog (produced − done)', points: series.map((s) => [s.t, s.backlog] as const) },
            { name: 'inside the worker (in flight)', points: series.map((s) => [s.t, s.inFlight] as const) },
          ],
          refs: [
            {
              y: maxInFlightBound,
              label: `(${UNCOMMITTED_PER_HIGH_WATER} × HIGH_WATER + one fetch) × partitions`,
            },
          ],
        }),
      },
      {
        file: 'burst-rss.svg',
        title: 'Burst: worker memory',
        svg: lineChart({
          title: 'Burst: worker RSS (MB)',
          xLabel: 'seconds since the worker started',
          yLabel: 'MB',
          series: [{ name: 'RSS', points: series.map((s) => [s.t, s.rss] as const) }],
          refs: [{ y: RSS_TARGET_MB, label: `${RSS_TARGET_MB} MB target` }],
        }),
      },
    ],
    data: { ...b, samples: undefined, produced: undefined },
  };
}
