/**
 * Scale-out (`npm run bench -- --only scaleout`): on a 3-broker cluster, one
 * pre-loaded 12-partition topic drained by 1, 2 and 3 workers in one consumer group (a fresh
 * group and fresh indices each time), against the raw `_bulk` ceiling measured in the same
 * run on the same documents. CPU seconds by process: the workers, each broker,
 * Elasticsearch, Redis and this process (the loader, the pollers).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { committedOn } from '../harness/deployment/topic-checks.js';
import { barChart } from '../harness/plot.js';
import { planWorkload } from '../src/generator/workload.js';
import { type CeilingResult, deleteIndices, runCeiling } from './lib/ceiling.js';
import { type BenchCluster, benchCluster } from './lib/cluster.js';
import { documentOf } from './lib/documents.js';
import type { Section, WorkerBenchOptions } from './lib/report.js';
import { cpuSeconds, ensureStack, produceAll, RunResources, sleep, stackPids } from './lib/stack.js';
import { fmt } from './lib/stats.js';
import { BenchWorker } from './lib/worker.js';

export interface ScaleOutOptions extends WorkerBenchOptions {
  readonly cores: number;
}

const PARTITIONS = 12;
const WORKERS = [1, 2, 3];

interface Point {
  readonly workers: number;
  readonly drained: boolean;
  readonly ms: number;
  readonly rate: number;
  /** Records done by each worker (a record replayed after a rebalance counts twice). */
  readonly doneBy: number[];
  /** CPU seconds over the drain, by process group. */
  readonly cpu: Record<string, number>;
}

type Pids = Record<string, number | undefined>;

/** CPU seconds used so far by each process, summed by group (`worker 2` → `workers`, `kafka-3` → `brokers`). */
function cpuByGroup(pids: Pids): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const s = pid === undefined ? undefined : cpuSeconds(pid);
    if (s === undefined) continue;
    const group = name.startsWith('worker') ? 'workers' : name.startsWith('kafka-') ? 'brokers' : name;
    out[group] = (out[group] ?? 0) + s;
  }
  return out;
}

const minus = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(Object.keys(a).map((k) => [k, a[k]! - (b[k] ?? 0)]));

/**
 * `k` workers drain the topic. The drain runs from the first record done by any of them to
 * the moment the group's committed offsets reach every partition's end (the contract's
 * "durably done"), so the start-up rebalances of a group that grows to k members count.
 */
async function drainWith(
  k: number,
  o: { res: RunResources; cluster: BenchCluster; topic: string; n: number; capMs: number; pids: Pids },
  opts: ScaleOutOptions,
  logDir: string,
  key = `s${k}`,
): Promise<Point> {
  const group = o.res.name(`${key}-group`);
  const prefix = `${o.res.runId}:${key}:`;
  o.res.redisPrefixes.add(prefix);
  const env = {
    KAFKA_BROKERS: o.cluster.brokers,
    INGEST_TOPICS: o.topic,
    INGEST_GROUP: group,
    PROFILES_INDEX: o.res.name(`${key}-profiles`),
    EVENTS_INDEX: o.res.name(`${key}-events`),
    DLQ_TOPIC: o.res.name('dlq'),
    TRIGGERS_TOPIC: o.res.name('triggers'),
    PROGRESS_TOPIC: o.res.name('progress'),
    REDIS_KEY_PREFIX: prefix,
  };
  const workers = await Promise.all(
    Array.from({ length: k }, (_, i) =>
      BenchWorker.start({
        entry: opts.workerEntry,
        name: `${o.res.runId}-${key}-${i + 1}`,
        logDir,
        stackPids: {},
        env,
      }),
    ),
  );
  const admin = o.cluster.kafka.admin();
  await admin.connect();
  try {
    const pids = (): Pids => ({
      ...o.pids,
      ...Object.fromEntries(workers.map((w, i) => [`worker ${i + 1}`, w.pid])),
    });
    const doneNow = () => workers.reduce((a, w) => a + (w.last?.done ?? 0), 0);
    const capAt = performance.now() + o.capMs;
    while (doneNow() === 0 && performance.now() < capAt) {
      for (const w of workers)
        if (w.child.exitCode !== null) throw new Error(`worker ${key} exited; see ${logDir}`);
      await sleep(50);
    }
    const t0 = performance.now();
    const cpu0 = cpuByGroup(pids());
    let drained = false;
    let committed = 0;
    while (performance.now() < capAt) {
      const c = await committedOn(admin, group, o.topic);
      committed = c.total;
      if (c.atEnd) {
        drained = true;
        break;
      }
      await sleep(200);
    }
    const ms = performance.now() - t0;
    const cpu = minus(cpuByGroup(pids()), cpu0);
    return {
      workers: k,
      drained,
      ms,
      rate: ((drained ? o.n : committed) * 1000) / ms,
      doneBy: workers.map((w) => w.last?.done ?? 0),
      cpu,
    };
  } finally {
    await admin.disconnect();
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await deleteIndices([o.res.name(`${key}-events`), o.res.name(`${key}-profiles`)]);
  }
}

export async function scaleOutBenchmark(opts: ScaleOutOptions): Promise<Section> {
  const { quick, log } = opts;
  await ensureStack();
  const cluster = await benchCluster(log);
  const runId = `bench-so-${new Date().toISOString().slice(0, 16).replace(/[-:T]/g, '')}-${randomBytes(2).toString('hex')}`;
  const res = new RunResources(runId, cluster.kafka);
  const logDir = join(opts.resultsDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const stack = await stackPids();
  const pids: Pids = {
    ...cluster.pids,
    elasticsearch: stack.elasticsearch,
    redis: stack.redis,
    'bench (this process)': process.pid,
  };
  try {
    const n = quick ? 30_000 : 180_000;
    const plan = planWorkload({
      seed: 42,
      count: n,
      ratePerSec: 5_000,
      clients: 10_000,
      duplicateShare: 0.01,
      poisonShare: 0,
    });
    const topic = res.name('backlog');
    await res.createTopic(topic, PARTITIONS);
    const produced = await produceAll(cluster.kafka, topic, plan);
    log(
      `  backlog: ${fmt(n, 0)} messages in ${PARTITIONS} partitions (${fmt((n * 1000) / produced.ms, 0)}/s)`,
    );

    log('  ceiling: straight to _bulk …');
    const ceiling = await runCeiling({ quick, cores: opts.cores, log, res, pids }, plan.map(documentOf));
    log(
      `  ceiling: ${fmt(ceiling.rate, 0)} docs/s (batch ${ceiling.best.batch} × ${ceiling.best.concurrency})`,
    );

    // Brokers started for this run are cold: in their first drain a JFR recording put 42% of
    // their CPU in the JIT compiler threads. One unmeasured drain first, so the rows compare workers.
    log('  warming the brokers up: one unmeasured drain by 1 worker …');
    const drainOptions = { res, cluster, topic, n, capMs: quick ? 60_000 : 180_000, pids };
    const warmUp = await drainWith(1, drainOptions, opts, logDir, 'warm');
    log(`    warm-up ${fmt(warmUp.rate, 0)} docs/s (not reported as a row)`);

    const points: Point[] = [];
    for (const k of WORKERS) {
      log(`  ${k} worker(s) in one group: drain …`);
      const p = await drainWith(k, drainOptions, opts, logDir);
      log(
        `    ${fmt(p.rate, 0)} docs/s${p.drained ? '' : ' (did not drain in time)'}; done by worker ${p.doneBy.join(' / ')}`,
      );
      points.push(p);
    }
    return section(opts, { n, ceiling, points, origin: cluster.origin, warmUpRate: warmUp.rate });
  } finally {
    log('  cleaning up the run’s topics, indices, groups and Redis keys …');
    const problems = await res.cleanUp();
    if (problems.length > 0) log(`  clean-up problems: ${problems.join('; ')}`);
    await cluster.release();
  }
}

const GROUPS = ['workers', 'brokers', 'elasticsearch', 'redis', 'bench (this process)'] as const;

const sum = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, v) => a + v, 0);

/** Cores used on average over a drain, by process group. */
const coresOf = (p: Point) =>
  Object.fromEntries(Object.entries(p.cpu).map(([g, s]) => [g, s / (p.ms / 1000)])) as Record<string, number>;

/** Where the CPU went, read from the measurements rather than assumed. */
function cpuNote(cores: number, one: Point, best: Point): string {
  const c = coresOf(one);
  const total = sum(c);
  const parts = GROUPS.filter((g) => c[g] !== undefined)
    .map((g) => `${g} ${fmt(c[g]!, 2)}`)
    .join(', ');
  const full = total >= 0.85 * cores;
  return (
    `CPU over each drain, by process (seconds in the table). With one worker the machine already used ${fmt(total, 2)} of its ` +
    `${cores} cores (${parts}). ` +
    (full
      ? `So it was CPU-bound before a second worker started: another worker can only gain by taking CPU from the others, ` +
        `and the best, ${best.workers} workers, reached ${fmt(best.rate / one.rate, 2)}× one worker. Elasticsearch was far from ` +
        'its own limit (the ceiling). On a machine with a core per worker (and cores for the brokers) the drain should grow ' +
        'further; this one cannot show it.'
      : `A core was idle with one worker; the best, ${best.workers} workers, reached ${fmt(best.rate / one.rate, 2)}× one worker.`)
  );
}

function section(
  opts: ScaleOutOptions,
  r: { n: number; ceiling: CeilingResult; points: Point[]; origin: string; warmUpRate: number },
): Section {
  const one = r.points[0]!;
  const ceilingCpu: Record<string, number> = {};
  for (const c of r.ceiling.cpu) {
    const g = c.name.startsWith('kafka-') ? 'brokers' : c.name;
    ceilingCpu[g] = (ceilingCpu[g] ?? 0) + c.cpuSeconds;
  }
  const cpuCells = (cpu: Record<string, number>) =>
    GROUPS.map((g) => (cpu[g] === undefined ? '–' : fmt(cpu[g], 1)));
  const rows = [
    [
      'ceiling (_bulk loader)',
      '–',
      fmt(r.ceiling.rate, 0),
      '1.00',
      '–',
      fmt(r.ceiling.ms / 1000, 1),
      '–',
      fmt(sum(ceilingCpu) / (r.ceiling.ms / 1000), 2),
      ...cpuCells(ceilingCpu),
    ],
    ...r.points.map((p) => [
      `${p.workers} worker${p.workers > 1 ? 's' : ''}`,
      String(p.workers),
      fmt(p.rate, 0) + (p.drained ? '' : ' (not drained)'),
      fmt(p.rate / r.ceiling.rate, 2),
      fmt(p.rate / one.rate, 2),
      fmt(p.ms / 1000, 1),
      p.doneBy.map((d) => fmt(d, 0)).join(' / '),
      fmt(sum(p.cpu) / (p.ms / 1000), 2),
      ...cpuCells(p.cpu),
    ]),
  ];
  const best = r.points.reduce((a, p) => (p.rate > a.rate ? p : a));
  return {
    id: 'scaleout',
    title: 'Scale-out: 1, 2 and 3 workers in one group on a 3-broker cluster',
    tables: [
      {
        head: [
          'contender',
          'workers',
          'docs/s',
          'vs ceiling',
          'vs 1 worker',
          'drain s',
          'records done by worker',
          'cores used',
          ...GROUPS.map((g) => `CPU s ${g}`),
        ],
        rows,
      },
    ],
    targets: [],
    notes: [
      `${fmt(r.n, 0)} messages (10,000 clients, 1% re-sent copies) pre-loaded into one ${PARTITIONS}-partition topic ` +
        `(replication 3, min ISR 2) on ${r.origin}; Elasticsearch and Redis are the local stack's. Each row: a fresh group and fresh ` +
        'indices; all workers start together and the drain runs from the first record done to the moment the committed offsets ' +
        'reach every partition’s end, so the rebalances of a growing group are in it.',
      `Before the rows, one worker drained the backlog once unmeasured (${fmt(r.warmUpRate, 0)} docs/s) so the brokers' JIT ` +
        'was warm: brokers started for the run spent 42% of their CPU compiling in their first drain (a JFR recording).',
      `Records done by worker sum to more than the backlog when a rebalance moved a partition before its work was committed (the ` +
        'new owner does it again, as the contract allows: nothing is indexed twice).',
      cpuNote(opts.cores, one, best),
    ],
    plots: [
      {
        file: 'scaleout-docs-per-second.svg',
        title: 'Scale-out: documents/s',
        svg: barChart({
          title: 'Documents/s: the _bulk ceiling and 1, 2, 3 workers in one group',
          categories: ['ceiling', ...r.points.map((p) => `${p.workers} worker${p.workers > 1 ? 's' : ''}`)],
          series: [{ name: 'documents/s', values: [r.ceiling.rate, ...r.points.map((p) => p.rate)] }],
          unit: 'documents/s',
        }),
      },
      {
        file: 'scaleout-cpu.svg',
        title: 'Scale-out: CPU seconds by process',
        svg: barChart({
          title: 'CPU seconds per drain, by process',
          categories: r.points.map((p) => `${p.workers} worker${p.workers > 1 ? 's' : ''}`),
          series: ['workers', 'brokers', 'elasticsearch'].map((g) => ({
            name: g,
            values: r.points.map((p) => p.cpu[g] ?? 0),
          })),
          unit: 'CPU s',
        }),
      },
    ],
    data: { n: r.n, origin: r.origin, ceiling: { ...r.ceiling, series: undefined }, points: r.points },
  };
}
