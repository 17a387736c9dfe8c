import { documentOf } from './lib/documents.js';
import { measureLatency } from './lib/latency.js';
import { type Pinning, pinElasticsearchApart, pinningUnavailable } from './lib/pinning.js';
import type { RawDoc } from './lib/raw-bulk.js';
import type { Section, Target, WorkerBenchOptions } from './lib/report.js';
import { type kafkaClient, produceAll, redisClient } from './lib/stack.js';
import { fmt, summarize } from './lib/stats.js';
import { BenchWorker } from './lib/worker.js';
import { benchWorkerEnv } from './lib/worker-env.js';
import {
  bestLoaderSetting,
  type CeilingRun,
  DRAIN_CLIENTS,
  drainWithWorker,
  drainWorkload,
  type LoaderTrial,
  type MeasureContext,
  rawCeiling,
  type WorkerRun,
  withMeasureRun,
} from './lib/worker-vs-ceiling.js';

export type PartitionsOptions = WorkerBenchOptions;

interface Workload {
  readonly key: 'events' | 'mixed';
  readonly label: string;
  readonly profileShare: number;
  readonly docs: RawDoc[];
  /** Topic by partition count, each holding the same messages. */
  readonly topics: Map<number, string>;
  loader?: { best: LoaderTrial; trials: LoaderTrial[] };
}

interface Row {
  readonly pinned: boolean;
  readonly partitions: number;
  readonly workload: Workload;
  readonly ceiling: CeilingRun;
  readonly worker: WorkerRun;
}

interface ColdStart {
  readonly offered: number;
  readonly windows: { second: number; p99: number; count: number }[];
  readonly fromFifth: number;
  readonly steady: number;
  readonly missing: number;
}

const SWEEP = [1, 4, 8, 32];
/** The partition count whose peak RSS has its own target. */
const WIDE = 96;
const TARGETS = { events: 0.95, mixed: 0.9, notPinned: 0.9, rss8: 256, rss96: 384 } as const;

/** Worker settings the environment sets (they reach every worker of the run). */
const settingsInEnvironment = () =>
  Object.keys(process.env)
    .filter((k) => /^(BATCH|HIGH_WATER|LOW_WATER|COMMIT_|ES_CONCURRENCY|FETCH_|MAX_BYTES)/.test(k))
    .map((k) => `${k}=${process.env[k]}`);

const listOf = (v: string | undefined) =>
  v
    ?.split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function partitionsBenchmark(opts: PartitionsOptions): Promise<Section> {
  return withMeasureRun('parts', opts, sweep);
}

async function sweep(ctx: MeasureContext & PartitionsOptions, kafka: ReturnType<typeof kafkaClient>) {
  const n = ctx.quick ? 30_000 : 200_000;
  const counts = (listOf(process.env.BENCH_PARTITIONS) ?? SWEEP.map(String)).map(Number);
  const keys = listOf(process.env.BENCH_WORKLOADS) ?? ['events', 'mixed'];
  const wide = process.env.BENCH_PARTITIONS === undefined;
  const workloads: Workload[] = [];
  for (const [key, label, profileShare] of [
    ['events', 'events only', 0],
    ['mixed', '30% profile updates', 0.3],
  ] as const) {
    if (!keys.includes(key)) continue;
    const plan = drainWorkload(n, profileShare);
    const w: Workload = { key, label, profileShare, docs: plan.map(documentOf), topics: new Map() };
    for (const p of [...counts, ...(wide && key === 'events' ? [WIDE] : [])]) {
      const topic = ctx.res.name(`${key}-p${p}`);
      await ctx.res.createTopic(topic, p);
      const r = await produceAll(kafka, topic, plan);
      ctx.log(
        `  ${label}, ${p} partitions: ${fmt(r.count, 0)} messages (${fmt((r.count * 1000) / r.ms, 0)}/s)`,
      );
      w.topics.set(p, topic);
    }
    workloads.push(w);
  }
  const notes: string[] = [];
  const env = settingsInEnvironment();
  if (env.length > 0) notes.push(`Set in the environment for every worker: ${env.join(', ')}.`);

  // The servers' JIT (transactions, create and mget paths) is paid by an unmeasured drain.
  for (const w of workloads) {
    ctx.log(`  warming the stack up: an unmeasured drain, ${w.label} …`);
    const { run } = await drainWithWorker(ctx, w.topics.get(counts.includes(8) ? 8 : counts[0]!)!, n);
    ctx.log(`    warm-up ${fmt(run.rate, 0)} docs/s (not a row)`);
  }

  const rows: Row[] = [];
  const row = async (pinned: boolean, w: Workload, partitions: number) => {
    const setting = w.loader!.best;
    ctx.log(`  ${pinned ? 'pinned' : 'not pinned'}, ${w.label}, ${partitions} partitions …`);
    const ceiling = await rawCeiling(ctx, w.docs, setting);
    const { run: worker } = await drainWithWorker(ctx, w.topics.get(partitions)!, n);
    ctx.log(
      `    ceiling ${fmt(ceiling.rate, 0)} docs/s, worker ${fmt(worker.rate, 0)} docs/s: ${fmt(worker.rate / ceiling.rate, 2)}; ` +
        `worker thread busy ${fmt(worker.threadBusy, 2)}; peak RSS ${fmt(worker.peakRssMb, 0)} MB`,
    );
    rows.push({ pinned, partitions, workload: w, ceiling, worker });
  };

  const unavailable = await pinningUnavailable();
  const esPid = ctx.pids.elasticsearch;
  if (unavailable || esPid === undefined) {
    notes.push(`Pinned rows did not run: ${unavailable ?? 'no Elasticsearch pid found'}.`);
  } else {
    const { elasticsearch: _, ...others } = ctx.pids;
    let pinning: Pinning | undefined;
    try {
      pinning = await pinElasticsearchApart({ elasticsearch: esPid, others });
      notes.push(`Pinned layout: ${pinning.layout}.`);
      for (const w of workloads) {
        ctx.log(`  pinned, ${w.label}: the loader's best setting …`);
        w.loader = await bestLoaderSetting(ctx, w.docs);
        ctx.log(`    ${loaderText(w.loader)}`);
        for (const p of [...w.topics.keys()].sort((a, b) => a - b)) await row(true, w, p);
      }
    } finally {
      await pinning?.restore();
      ctx.log('  pinning undone: every process has its CPUs back');
    }
  }
  const events = workloads.find((w) => w.key === 'events');
  if (events?.topics.has(8)) {
    ctx.log('  not pinned, events only: the loader’s best setting on both cores …');
    events.loader = await bestLoaderSetting(ctx, events.docs);
    await row(false, events, 8);
  }
  const cold = wide && events ? await coldStart(ctx, kafka) : undefined;
  return section(n, rows, workloads, cold, notes);
}

/**
 * A fresh worker under a steady load from its start: p99 of produce-to-indexed latency per
 * second of sending, from the first second on.
 */
async function coldStart(ctx: MeasureContext & PartitionsOptions, kafka: ReturnType<typeof kafkaClient>) {
  const offered = 5_000;
  const topic = ctx.res.name('cold-live');
  await ctx.res.createTopic(topic, 8);
  const tag = `cold${ctx.runs++}`;
  ctx.log(`  a cold worker under a steady ${fmt(offered, 0)} msg/s …`);
  const worker = await BenchWorker.start({
    entry: ctx.workerEntry,
    name: `${ctx.res.runId}-${tag}`,
    logDir: ctx.logDir,
    stackPids: ctx.pids,
    env: benchWorkerEnv(ctx.res, tag, [topic]),
  });
  const redis = redisClient();
  try {
    const durationMs = ctx.quick ? 10_000 : 30_000;
    const l = await measureLatency({
      kafka,
      redis,
      topic,
      marks: { keyPrefix: `${ctx.res.runId}:${tag}:`, group: ctx.res.name(`${tag}-group`), ttlMs: 3_600_000 },
      ratePerSec: offered,
      durationMs,
      seed: 11,
      clients: DRAIN_CLIENTS,
      sampleEvery: 10,
      settleMs: 10_000,
      startInMs: 500,
    });
    const bySecond = new Map<number, number[]>();
    l.latencies.forEach((x, i) => {
      const s = Math.floor(l.sentAt[i]! / 1000);
      bySecond.set(s, [...(bySecond.get(s) ?? []), x]);
    });
    const windows = [...bySecond.entries()]
      .sort(([a], [b]) => a - b)
      .map(([second, xs]) => ({ second, p99: summarize(xs).p99, count: xs.length }));
    const p99Of = (keep: (sentAt: number) => boolean) =>
      summarize(l.latencies.filter((_, i) => keep(l.sentAt[i]!))).p99;
    const cold: ColdStart = {
      offered,
      windows,
      fromFifth: p99Of((t) => t >= 4_000),
      steady: p99Of((t) => t >= durationMs / 2),
      missing: l.missing,
    };
    ctx.log(
      `    p99 from the fifth second on ${fmt(cold.fromFifth, 0)} ms, steady ${fmt(cold.steady, 0)} ms; ` +
        `first seconds: ${windows
          .slice(0, 6)
          .map((w) => fmt(w.p99, 0))
          .join(', ')} ms`,
    );
    return cold;
  } finally {
    redis.disconnect();
    await worker.stop(10_000);
  }
}

const loaderText = (l: { best: LoaderTrial; trials: LoaderTrial[] }) =>
  `best batch ${l.best.batch} × ${l.best.concurrency} in flight, of ${l.trials
    .map((t) => `${t.batch}×${t.concurrency} ${fmt(t.rate, 0)}`)
    .join(', ')}`;

function section(
  n: number,
  rows: readonly Row[],
  workloads: readonly Workload[],
  cold: ColdStart | undefined,
  notes: string[],
): Section {
  const ratio = (r: Row) => r.worker.rate / r.ceiling.rate;
  const targets: Target[] = [];
  for (const r of rows) {
    if (r.partitions === WIDE) continue;
    const want = !r.pinned ? TARGETS.notPinned : TARGETS[r.workload.key];
    targets.push({
      name: `${r.pinned ? 'pinned' : 'not pinned'}, ${r.workload.label}, ${r.partitions} partitions: worker ÷ ceiling`,
      target: `≥ ${want}`,
      value: fmt(ratio(r), 2),
      pass: ratio(r) >= want,
    });
  }
  const rss = (p: number) =>
    Math.max(0, ...rows.filter((r) => r.partitions === p).map((r) => r.worker.peakRssMb));
  if (rss(8) > 0)
    targets.push({
      name: 'peak RSS, 8 partitions, both workloads',
      target: `< ${TARGETS.rss8} MB`,
      value: `${fmt(rss(8), 0)} MB`,
      pass: rss(8) < TARGETS.rss8,
    });
  if (rss(WIDE) > 0)
    targets.push({
      name: `peak RSS, ${WIDE} partitions`,
      target: `< ${TARGETS.rss96} MB`,
      value: `${fmt(rss(WIDE), 0)} MB`,
      pass: rss(WIDE) < TARGETS.rss96,
    });
  if (cold) {
    targets.push(
      {
        name: 'cold start, p99 latency from the fifth second on',
        target: '< 500 ms',
        value: `${fmt(cold.fromFifth, 0)} ms`,
        pass: cold.fromFifth < 500,
      },
      {
        name: 'cold start, p99 latency in steady state',
        target: '< 250 ms',
        value: `${fmt(cold.steady, 0)} ms`,
        pass: cold.steady < 250,
      },
    );
  }
  for (const w of workloads)
    if (w.loader) notes.push(`Loader, ${w.label} (last search): ${loaderText(w.loader)}.`);
  notes.push(
    `Each row drains the same ${fmt(n, 0)} pre-produced messages (${fmt(DRAIN_CLIENTS, 0)} clients, 1% re-sent copies) from a topic of that many partitions; just before it, the raw loader writes the same documents, encoded before its clock starts, at the best batch size and requests in flight found for the workload (batch doubled from 500, then requests in flight doubled, each while the rate still grew by 2%).`,
  );
  if (cold)
    notes.push(
      `Cold start: a fresh worker on an empty 8-partition topic, ${fmt(cold.offered, 0)} msg/s sent from half a second after its spawn; latency is produce to the owner mark in Redis (set right after the bulk that created the event answered), one event in ten sampled; ${cold.missing} samples not found. p99 per second of sending: ${cold.windows.map((w) => fmt(w.p99, 0)).join(', ')} ms.`,
    );
  const budget = {
    title: 'What stands between each row and its target (µs per document)',
    head: [
      'mode, workload, partitions',
      'target rate (docs/s)',
      'CPU on the load’s core(s): worker + Kafka + Redis + bench',
      'CPU the target leaves',
      'worker thread busy per document',
      'time between documents at the target',
    ],
    rows: rows
      .filter((r) => r.partitions !== WIDE)
      .map((r) => {
        const want = (r.pinned ? TARGETS[r.workload.key] : TARGETS.notPinned) * r.ceiling.rate;
        const w = r.worker;
        const parts = [
          w.cpuUsPerDoc,
          ...['Kafka', 'Redis', 'bench'].map((k) => w.othersUsPerDoc[k] ?? Number.NaN),
        ];
        if (!r.pinned) parts.push((w.esCores * 1e6) / w.rate);
        return [
          `${r.pinned ? 'pinned' : 'not pinned'}, ${r.workload.label}, ${r.partitions}`,
          fmt(want, 0),
          `${fmt(
            parts.reduce((a, b) => a + b, 0),
            1,
          )} = ${parts.map((x) => fmt(x, 1)).join(' + ')}${r.pinned ? '' : ' + ES'}`,
          fmt(((r.pinned ? 1 : 2) * 1e6) / want, 1),
          fmt((w.threadBusy * 1e6) / w.rate, 1),
          fmt(1e6 / want, 1),
        ];
      }),
  };
  return {
    id: 'partitions',
    title: 'Elasticsearch is the limit at every partition count: worker vs raw _bulk by partitions',
    tables: [
      {
        head: [
          'mode',
          'workload',
          'partitions',
          'raw _bulk ceiling (docs/s)',
          'worker (docs/s)',
          'ratio',
          'worker CPU (µs/doc)',
          'worker thread busy',
          'first record done (s after spawn)',
          'worker peak RSS (MB)',
          'at the peak: heap used / external (MB)',
        ],
        rows: rows.map((r) => [
          r.pinned ? 'pinned' : 'not pinned',
          r.workload.label,
          String(r.partitions),
          `${fmt(r.ceiling.rate, 0)} (${r.ceiling.batch} × ${r.ceiling.concurrency})`,
          `${fmt(r.worker.rate, 0)}${r.worker.drained ? '' : ' (did not drain)'}`,
          fmt(ratio(r), 2),
          fmt(r.worker.cpuUsPerDoc, 1),
          fmt(r.worker.threadBusy, 2),
          fmt(r.worker.firstDoneMs / 1000, 1),
          fmt(r.worker.peakRssMb, 0),
          r.worker.atPeak
            ? `${fmt(r.worker.atPeak.heapUsedMb, 0)} / ${fmt(r.worker.atPeak.externalMb, 0)}`
            : 'n/a',
        ]),
      },
      budget,
    ],
    targets,
    notes,
    plots: [],
    data: { n, rows: rows.map((r) => ({ ...r, workload: r.workload.label })), cold },
  };
}
