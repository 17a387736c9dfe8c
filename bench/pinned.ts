import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { barChart } from '../harness/plot.js';
import { planWorkload } from '../src/generator/workload.js';
import { type AllocationRun, allocationTables, summarizeAllocationFile } from './lib/allocations.js';
import { documentOf } from './lib/documents.js';
import { type Pinning, pinElasticsearchApart, pinningUnavailable } from './lib/pinning.js';
import type { RawDoc } from './lib/raw-bulk.js';
import type { Section, Table, Target, WorkerBenchOptions } from './lib/report.js';
import { type kafkaClient, produceAll } from './lib/stack.js';
import { type StageTime, stagesOfProfileFile } from './lib/stages.js';
import { fmt } from './lib/stats.js';
import { cpuProfileOf } from './lib/worker.js';
import {
  bestLoaderSetting,
  type CeilingRun,
  drainWithWorker,
  type MeasureContext,
  rawCeiling,
  type WorkerRun,
  withMeasureRun,
} from './lib/worker-vs-ceiling.js';

export type PinnedOptions = WorkerBenchOptions;

interface Workload {
  readonly key: string;
  readonly label: string;
  readonly profileShare: number;
  readonly topic: string;
  readonly docs: RawDoc[];
}

interface Row {
  readonly mode: 'pinned' | 'not pinned';
  readonly workload: Workload;
  readonly ceiling: CeilingRun;
  readonly worker: WorkerRun;
}

type Ctx = MeasureContext & PinnedOptions;

const CLIENTS = 10_000;

export function pinnedBenchmark(opts: PinnedOptions): Promise<Section> {
  return withMeasureRun('pin', opts, runPinned);
}

async function runPinned(ctx: Ctx, kafka: ReturnType<typeof kafkaClient>): Promise<Section> {
  const n = ctx.quick ? 30_000 : 200_000;
  const workloads: Workload[] = [];
  for (const [key, label, profileShare] of [
    ['events', 'events only', 0],
    ['mixed', '30% profile updates', 0.3],
  ] as const) {
    const plan = planWorkload({
      seed: 7,
      count: n,
      ratePerSec: 5_000,
      clients: CLIENTS,
      profileShare,
      duplicateShare: 0.01,
      poisonShare: 0,
      hostileKeyShare: 0,
    });
    const topic = ctx.res.name(`${key}-backlog`);
    await ctx.res.createTopic(topic, 8);
    const p = await produceAll(kafka, topic, plan);
    ctx.log(`  backlog ${label}: ${fmt(p.count, 0)} messages (${fmt((p.count * 1000) / p.ms, 0)}/s)`);
    workloads.push({ key, label, profileShare, topic, docs: plan.map(documentOf) });
  }

  // Unmeasured drains first: a stack started for the run pays its JIT in the first worker
  // drain (the brokers' transaction paths, Elasticsearch's create and mget paths), which
  // would halve the first pinned row.
  const warmUp: string[] = [];
  for (const w of workloads) {
    ctx.log(`  warming the stack up: one unmeasured worker drain, ${w.label} …`);
    const { run } = await drainWithWorker(ctx, w.topic, n);
    warmUp.push(`${w.label} ${fmt(run.rate, 0)} docs/s`);
    ctx.log(`    warm-up ${fmt(run.rate, 0)} docs/s (not a row)`);
  }

  const rows: Row[] = [];
  const notes: string[] = [
    `Before the rows, the worker drained each backlog once, unmeasured and not pinned, so that the servers' JIT was warm (${warmUp.join(', ')}); the loader's short search warms its own path.`,
  ];
  const unavailable = await pinningUnavailable();
  const esPid = ctx.pids.elasticsearch;
  if (unavailable || esPid === undefined) {
    notes.push(`Pinned mode did not run: ${unavailable ?? 'no Elasticsearch pid found'}.`);
  } else {
    const { elasticsearch: _, ...others } = ctx.pids;
    let pinning: Pinning | undefined;
    try {
      pinning = await pinElasticsearchApart({ elasticsearch: esPid, others });
      ctx.log(`  pinned: ${pinning.layout}`);
      notes.push(`Pinned layout: ${pinning.layout}.`);
      for (const w of workloads) rows.push(await measure(ctx, 'pinned', w, n));
    } finally {
      await pinning?.restore();
      ctx.log('  pinning undone: every process has its CPUs back');
    }
  }
  rows.push(await measure(ctx, 'not pinned', workloads[0]!, n));

  ctx.log('  profiling the worker (node --cpu-prof), not pinned, events only …');
  const stages = await profileStages(ctx, workloads[0]!, n);
  ctx.log('  sampling the worker’s allocations, not pinned, events only …');
  const allocations = await profileAllocations(ctx, workloads[0]!, n);
  return section(n, rows, stages, allocations, notes);
}

async function measure(ctx: Ctx, mode: Row['mode'], w: Workload, n: number): Promise<Row> {
  ctx.log(`  ${mode}, ${w.label}: the raw _bulk ceiling …`);
  const ceiling = await bestCeiling(ctx, w);
  ctx.log(
    `    raw ceiling ${fmt(ceiling.rate, 0)} docs/s (batch ${ceiling.batch} × ${ceiling.concurrency} in flight)`,
  );
  ctx.log(`  ${mode}, ${w.label}: the worker drains ${fmt(n, 0)} …`);
  const { run: worker } = await drainWithWorker(ctx, w.topic, n);
  ctx.log(
    `    worker ${fmt(worker.rate, 0)} docs/s (${fmt(worker.rate / ceiling.rate, 2)} of the ceiling); ` +
      `${fmt(worker.cpuUsPerDoc, 1)} µs CPU/doc; cores busy ${busyText(worker.coreBusy)} ` +
      `(ceiling run ${busyText(ceiling.coreBusy)}); peak RSS ${fmt(worker.peakRssMb, 0)} MB`,
  );
  return { mode, workload: w, ceiling, worker };
}

/** The loader's best setting for these documents, then every document at that setting. */
async function bestCeiling(ctx: Ctx, w: Workload): Promise<CeilingRun> {
  const { best } = await bestLoaderSetting(ctx, w.docs);
  return rawCeiling(ctx, w.docs, best);
}

const busyText = (xs: readonly number[]) => (xs.length > 0 ? xs.map((x) => fmt(x, 2)).join(' / ') : 'n/a');

function profilesDir(ctx: Ctx): string {
  const dir = join(ctx.resultsDir, 'profiles');
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function profileStages(ctx: Ctx, w: Workload, n: number): Promise<StageTime[] | undefined> {
  const dir = profilesDir(ctx);
  const r = await drainWithWorker(ctx, w.topic, n, { cpuProfDir: dir });
  return Promise.resolve()
    .then(() => stagesOfProfileFile(cpuProfileOf(dir, r.name), r.window))
    .catch(() => undefined);
}

/** One more drain under the sampling allocation profiler: what the GC share above is made of. */
async function profileAllocations(ctx: Ctx, w: Workload, n: number): Promise<AllocationRun | undefined> {
  const allocationFile = join(profilesDir(ctx), `${ctx.res.runId}-allocations.heapprofile`);
  const r = await drainWithWorker(ctx, w.topic, n, { allocationFile });
  return summarizeAllocationFile(allocationFile)
    .then((summary) => ({ summary, docs: n, rate: r.run.rate }))
    .catch(() => undefined);
}

/** The ratios the rows are held to: worker ÷ raw ceiling. */
const RATIO_TARGETS = { pinnedEvents: 0.95, pinnedProfiles: 0.9, notPinned: 0.5 } as const;

/** The ratio a row is held to. */
const targetOf = (r: Row) =>
  r.mode === 'not pinned'
    ? RATIO_TARGETS.notPinned
    : r.workload.profileShare > 0
      ? RATIO_TARGETS.pinnedProfiles
      : RATIO_TARGETS.pinnedEvents;

/**
 * Per row: what a document costs on the cores that carry the load, and what the target rate
 * leaves per document, in CPU and in the worker thread's time.
 */
function budgetTable(rows: readonly Row[]): Table {
  return {
    title: 'What stands between each row and its target (µs per document)',
    head: [
      'mode, workload',
      'target rate (docs/s)',
      'CPU on the load’s cores: worker + Kafka + Redis + bench (+ ES not pinned)',
      'CPU the target leaves',
      'worker thread busy per document',
      'time between documents at the target',
    ],
    rows: rows.map((r) => {
      const want = targetOf(r) * r.ceiling.rate;
      const cores = r.mode === 'pinned' ? 1 : 2;
      const w = r.worker;
      const other = (k: string) => w.othersUsPerDoc[k] ?? Number.NaN;
      const parts: number[] = [w.cpuUsPerDoc, other('Kafka'), other('Redis'), other('bench')];
      if (r.mode === 'not pinned') parts.push((w.esCores * 1e6) / w.rate);
      const used = parts.reduce((a, b) => a + b, 0);
      return [
        `${r.mode}, ${r.workload.label}`,
        `${fmt(want, 0)} (${targetOf(r)} × ${fmt(r.ceiling.rate, 0)})`,
        `${fmt(used, 1)} = ${parts.map((x) => fmt(x, 1)).join(' + ')}`,
        fmt((cores * 1e6) / want, 1),
        fmt((w.threadBusy * 1e6) / w.rate, 1),
        fmt(1e6 / want, 1),
      ];
    }),
  };
}

function section(
  n: number,
  rows: readonly Row[],
  stages: StageTime[] | undefined,
  allocations: AllocationRun | undefined,
  notes: string[],
): Section {
  const ratio = (r: Row) => r.worker.rate / r.ceiling.rate;
  const find = (mode: Row['mode'], key: string) =>
    rows.find((r) => r.mode === mode && r.workload.key === key);
  const target = (name: string, want: number, r: Row | undefined): Target => ({
    name,
    target: `≥ ${want}`,
    value: r ? fmt(ratio(r), 2) : 'not measured',
    pass: r ? ratio(r) >= want : undefined,
  });
  const peak = Math.max(0, ...rows.map((r) => r.worker.peakRssMb));
  const unpinned = find('not pinned', 'events');
  const totalUs = unpinned?.worker.cpuUsPerDoc ?? Number.NaN;
  const stageRows = (stages ?? []).map((s) => [s.stage, fmt(s.share * 100, 1), fmt(s.share * totalUs, 1)]);
  notes.push(
    `Each row drains the same ${fmt(n, 0)} pre-produced messages (8 partitions, ${fmt(CLIENTS, 0)} clients, 1% re-sent copies); the raw loader writes the same documents, encoded into NDJSON bodies before its clock starts, with the best of a short batch-size and concurrency search.`,
    'Busy per core is each core’s share of time not idle (/proc/stat) over the same span, whoever used it: pinned, CPU 1 carries the load with Kafka, Redis and the bench process, so a CPU 1 near 1.00 during the worker’s drain says the worker side is CPU-bound and only less CPU per document raises its figure.',
    'Worker CPU per document is the worker process’s user+system time (/proc) from its first record to its last, divided by the records done; Elasticsearch cores is its CPU time over the same span. Worker thread busy is the share of that span its main thread was busy (rxingest_nodejs_eventloop_busy_seconds_total): near 1, the one thread that runs the graph is the limit, whatever the cores do.',
    'What stands between each row and its target: the CPU a document costs on the cores that carry the load (pinned: CPU 1, the worker with Kafka, Redis and this bench; not pinned: both cores, Elasticsearch too), against what those cores have per document at the target rate; and the worker thread’s busy time per document against the time between documents at that rate. Either one over its budget holds the row below its target.',
  );
  if (allocations)
    notes.push(
      `Allocations come from one more not-pinned drain under V8's sampling heap profiler (every 32 KiB, objects the GC collected included, the probe's own left out): ${fmt(allocations.summary.totalBytes / allocations.docs / 1024, 1)} KiB allocated per document in all; that drain's own rate (${fmt(allocations.rate, 0)} docs/s, the profiler running) is not used above.`,
    );
  if (stages)
    notes.push(
      'Stages come from a separate not-pinned drain under node --cpu-prof: each sample is charged to the innermost frame that belongs to a stage; µs per document apportions the measured worker CPU per document by those shares.',
    );
  return {
    id: 'pinned',
    title: 'Elasticsearch is the speed limit: worker vs raw _bulk, pinned and not',
    tables: [
      {
        head: [
          'mode',
          'workload',
          'raw _bulk ceiling (docs/s)',
          'worker (docs/s)',
          'ratio',
          'worker CPU (µs/doc)',
          'worker thread busy',
          'ES cores (ceiling / worker)',
          'busy per core, CPU 0 / CPU 1 (ceiling; worker)',
          'worker peak RSS (MB)',
        ],
        rows: rows.map((r) => [
          r.mode,
          r.workload.label,
          `${fmt(r.ceiling.rate, 0)} (batch ${r.ceiling.batch} × ${r.ceiling.concurrency})`,
          `${fmt(r.worker.rate, 0)}${r.worker.drained ? '' : ' (did not drain)'}`,
          fmt(ratio(r), 2),
          fmt(r.worker.cpuUsPerDoc, 1),
          fmt(r.worker.threadBusy, 2),
          `${fmt(r.ceiling.esCores, 2)} / ${fmt(r.worker.esCores, 2)}`,
          `${busyText(r.ceiling.coreBusy)}; ${busyText(r.worker.coreBusy)}`,
          fmt(r.worker.peakRssMb, 0),
        ]),
      },
      budgetTable(rows),
      ...(stageRows.length > 0
        ? [
            {
              title: 'Worker CPU by stage (not pinned, events only, from a CPU profile)',
              head: ['stage', 'share of worker CPU (%)', 'µs per document'],
              rows: stageRows,
            },
          ]
        : []),
      ...(allocations ? allocationTables(allocations) : []),
    ],
    targets: [
      target(
        'pinned, events only: worker ÷ raw ceiling',
        RATIO_TARGETS.pinnedEvents,
        find('pinned', 'events'),
      ),
      target(
        'pinned, 30% profile updates: worker ÷ raw ceiling',
        RATIO_TARGETS.pinnedProfiles,
        find('pinned', 'mixed'),
      ),
      target('not pinned, events only: worker ÷ raw ceiling', RATIO_TARGETS.notPinned, unpinned),
      {
        name: 'worker peak RSS in these drains',
        target: '< 256 MB',
        value: `${fmt(peak, 0)} MB`,
        pass: peak > 0 ? peak < 256 : undefined,
      },
    ],
    notes,
    plots: [
      {
        file: 'pinned-throughput.svg',
        title: 'Worker vs raw _bulk ceiling',
        svg: barChart({
          title: 'Worker vs raw _bulk ceiling, same documents, same run',
          categories: rows.map((r) => `${r.mode}, ${r.workload.label}`),
          series: [
            { name: 'raw _bulk ceiling', values: rows.map((r) => r.ceiling.rate) },
            { name: 'worker', values: rows.map((r) => r.worker.rate) },
          ],
          unit: 'docs/s',
        }),
      },
    ],
    data: {
      n,
      rows: rows.map((r) => ({ ...r, workload: r.workload.label })),
      stages,
      allocations: allocations?.summary,
    },
  };
}
