/**
 * What a partition costs the worker in memory: `node --import tsx bench/partition-memory.ts`
 * (under the heavy lock; dist/ built first, so that the worker runs as shipped).
 *
 * For each partition count of MEM_PARTITIONS (default 8,96):
 *  - idle: the worker on an empty topic of that many partitions, every partition assigned and
 *    opened; its process.memoryUsage() and a heap snapshot summarized by constructor. The
 *    difference between two counts is what each partition costs before it holds a record.
 *  - drain: the worker drains MEM_N (200,000) pre-produced events, as the partition sweep's
 *    rows do; peak RSS, what the resident memory was made of at its peak, the drain rate.
 *    With MEM_SNAPSHOT_AT (a share of MEM_N, e.g. 0.3) a second drain of the same topic takes a
 *    heap snapshot once that share is done (the snapshot stops the worker for seconds: that
 *    drain is not measured).
 *
 * MEM_ONLY=idle or drain runs one kind; MEM_RUNS repeats the measured drain; MEM_ENV
 * (NAME=value,…) sets worker settings for every worker of the run.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { planWorkload } from '../src/generator/workload.js';
import { drainRate } from './lib/drain.js';
import { type HeapRow, summarizeHeapFile } from './lib/heap-summary.js';
import { type kafkaClient, produceAll, sleep } from './lib/stack.js';
import { fmt } from './lib/stats.js';
import { BenchWorker } from './lib/worker.js';
import { benchWorkerEnv } from './lib/worker-env.js';
import { type MeasureContext, withMeasureRun } from './lib/worker-vs-ceiling.js';

const list = (v: string | undefined, d: string) =>
  (v ?? d)
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
const COUNTS = list(process.env.MEM_PARTITIONS, '8,96').map(Number);
const N = Number(process.env.MEM_N ?? 200_000);
const ONLY = process.env.MEM_ONLY;
const RUNS = Number(process.env.MEM_RUNS ?? 1);
const SNAPSHOT_AT = process.env.MEM_SNAPSHOT_AT ? Number(process.env.MEM_SNAPSHOT_AT) : undefined;
const EXTRA_ENV = Object.fromEntries(
  list(process.env.MEM_ENV, '').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const ENTRY = existsSync('dist/cli/main.js') ? undefined : ['--import', 'tsx', 'src/cli/main.ts'];
const MB = 2 ** 20;

const log = (line: string) => console.log(line);
const mb = (b: number) => fmt(b / MB, 1);

interface Memory {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

const memoryLines = (file: string): Memory[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Memory);

const memText = (m: Memory) =>
  `rss ${mb(m.rss)}, heap used ${mb(m.heapUsed)} of ${mb(m.heapTotal)}, external ${mb(m.external)} (array buffers ${mb(m.arrayBuffers)})`;

/** Sends SIGUSR2 and waits until the snapshot V8 writes into `dir` stops growing. */
async function snapshot(worker: BenchWorker, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  worker.child.kill('SIGUSR2');
  let file: string | undefined;
  let size = -1;
  for (let stable = 0; stable < 8; ) {
    await sleep(250);
    file ??= readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file === undefined) continue;
    const s = statSync(join(dir, file)).size;
    stable = s === size && s > 0 ? stable + 1 : 0;
    size = s;
  }
  return join(dir, file!);
}

function rowsText(rows: readonly HeapRow[]): string {
  return rows
    .map((r) => `    ${mb(r.bytes).padStart(7)} MB  ${String(r.count).padStart(8)}  ${r.what}`)
    .join('\n');
}

async function summarize(file: string, label: string) {
  const s = await summarizeHeapFile(file, 40);
  log(`  heap snapshot, ${label}: ${mb(s.totalBytes)} MB in all; by constructor (self size, count):`);
  log(rowsText(s.rows));
  rmSync(file);
  return s;
}

const flags = (dir: string) => ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`];

async function idle(ctx: MeasureContext, p: number) {
  const topic = ctx.res.name(`idle-p${p}`);
  await ctx.res.createTopic(topic, p);
  const tag = `i${ctx.runs++}`;
  const dir = join(ctx.logDir, `${ctx.res.runId}-${tag}-snap`);
  mkdirSync(dir, { recursive: true });
  const worker = await BenchWorker.start({
    entry: ENTRY,
    name: `${ctx.res.runId}-${tag}`,
    logDir: ctx.logDir,
    stackPids: {},
    nodeFlags: flags(dir),
    env: { ...benchWorkerEnv(ctx.res, tag, [topic]), LOG_LEVEL: 'info', ...EXTRA_ENV },
  });
  try {
    const logFile = join(ctx.logDir, `${ctx.res.runId}-${tag}.log`);
    const opened = () =>
      existsSync(logFile) ? readFileSync(logFile, 'utf8').split('partition assigned').length - 1 : 0;
    const t0 = performance.now();
    while (opened() < p) {
      if (worker.child.exitCode !== null) throw new Error(`worker exited; see ${logFile}`);
      if (performance.now() - t0 > 120_000) throw new Error(`only ${opened()} of ${p} partitions opened`);
      await sleep(500);
    }
    await sleep(5_000);
    const m = memoryLines(join(ctx.logDir, `${ctx.res.runId}-${tag}.memory.jsonl`)).at(-1)!;
    log(`  idle, ${p} partitions open: ${memText(m)}`);
    const s = await summarize(await snapshot(worker, dir), `idle, ${p} partitions`);
    return { memory: m, heap: s };
  } finally {
    await worker.stop(30_000);
  }
}

async function drain(ctx: MeasureContext, topic: string, p: number, snapshotAt?: number) {
  const tag = `d${ctx.runs++}`;
  const dir = join(ctx.logDir, `${ctx.res.runId}-${tag}-snap`);
  mkdirSync(dir, { recursive: true });
  const worker = await BenchWorker.start({
    entry: ENTRY,
    name: `${ctx.res.runId}-${tag}`,
    logDir: ctx.logDir,
    stackPids: {},
    ...(snapshotAt !== undefined ? { nodeFlags: flags(dir) } : {}),
    env: { ...benchWorkerEnv(ctx.res, tag, [topic]), ...EXTRA_ENV },
  });
  let heap: Awaited<ReturnType<typeof summarize>> | undefined;
  try {
    if (snapshotAt !== undefined) {
      await worker.waitForDone(Math.round(N * snapshotAt), 240_000);
      const m = memoryLines(join(ctx.logDir, `${ctx.res.runId}-${tag}.memory.jsonl`)).at(-1)!;
      log(`  drain, ${p} partitions, at ${fmt(worker.last?.done ?? 0, 0)} done: ${memText(m)}`);
      heap = await summarize(await snapshot(worker, dir), `drain, ${p} partitions, mid-drain`);
    }
    if (!(await worker.waitForDone(N, 240_000))) log('  (did not drain)');
  } finally {
    await worker.stop(30_000);
  }
  if (snapshotAt !== undefined) return { heap };
  const peak = worker.memoryAtPeak()!;
  const lines = memoryLines(join(ctx.logDir, `${ctx.res.runId}-${tag}.memory.jsonl`));
  const maxOf = (k: keyof Memory) => Math.max(...lines.map((l) => l[k]));
  const { rate } = drainRate(worker, N);
  const atPeak = worker.samples.reduce((a, b) => (b.rssMb > a.rssMb ? b : a));
  const peakIn = worker.samples.reduce((a, b) => (b.inFlight > a.inFlight ? b : a));
  log(
    `  in flight (taken in, not committed): most ${fmt(peakIn.inFlight, 0)} at ${fmt(peakIn.t / 1000, 1)} s; ` +
      `${fmt(atPeak.inFlight, 0)} at the RSS peak (${fmt(atPeak.t / 1000, 1)} s, ${fmt(atPeak.done, 0)} done)`,
  );
  log(
    `  timeline (s: done, in flight, RSS MB): ${worker.samples
      .filter((_, i) => i % 4 === 0)
      .map((x) => `${fmt(x.t / 1000, 1)}: ${fmt(x.done, 0)}, ${fmt(x.inFlight, 0)}, ${fmt(x.rssMb, 0)}`)
      .join('; ')}`,
  );
  log(
    `  drain, ${p} partitions: ${fmt(rate, 0)} docs/s; peak RSS ${fmt(worker.peakRssMb(), 0)} MB; at the peak ${memText(peak)}; ` +
      `highest heap used ${mb(maxOf('heapUsed'))}, external ${mb(maxOf('external'))}, array buffers ${mb(maxOf('arrayBuffers'))}`,
  );
  return { rate, peakRss: worker.peakRssMb(), peak };
}

async function main() {
  const resultsDir = join('bench', 'results');
  await withMeasureRun(
    'mem',
    { quick: false, resultsDir, log },
    async (ctx, kafka: ReturnType<typeof kafkaClient>) => {
      const plan = planWorkload({
        seed: 7,
        count: N,
        ratePerSec: 5_000,
        clients: 10_000,
        profileShare: 0,
        duplicateShare: 0.01,
        poisonShare: 0,
        hostileKeyShare: 0,
      });
      for (const p of COUNTS) {
        if (ONLY !== 'drain') await idle(ctx, p);
        if (ONLY === 'idle') continue;
        const topic = ctx.res.name(`events-p${p}`);
        await ctx.res.createTopic(topic, p);
        await produceAll(kafka, topic, plan);
        for (let i = 0; i < RUNS; i++) await drain(ctx, topic, p);
        if (SNAPSHOT_AT !== undefined) await drain(ctx, topic, p, SNAPSHOT_AT);
      }
    },
  );
}

await main();
