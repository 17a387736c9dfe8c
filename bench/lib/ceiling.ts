import type { Client } from '@elastic/elasticsearch';
/**
 * The ceiling of the end-to-end benchmarks: the same documents the worker writes, loaded
 * straight into Elasticsearch with `_bulk` at the best batch size and concurrency found by a
 * short greedy search. Shared by e2e and scaleout, so that both compare the
 * worker against one loader.
 */
import { indexDialect } from '../../src/worker/index-dialect.js';
import type { Doc } from './documents.js';
import { coreBusySeconds, cpuSeconds, esClient, type RunResources, stackEngine } from './stack.js';
import { fmt } from './stats.js';
import { cpuBetween, type WorkerMetricsSample } from './worker.js';

/** What the loader needs of a benchmark's run. */
export interface CeilingContext {
  readonly quick: boolean;
  readonly cores: number;
  readonly log: (line: string) => void;
  readonly res: RunResources;
  /** Processes whose CPU time is counted (the stack's servers by name). */
  readonly pids: Readonly<Record<string, number | undefined>>;
}

// ------------------------------------------------------------------ documents

export async function createIndices(
  ctx: Pick<CeilingContext, 'res'>,
  prefix: string,
): Promise<{ events: string; profiles: string }> {
  const events = ctx.res.name(`${prefix}-events`);
  const profiles = ctx.res.name(`${prefix}-profiles`);
  const dialect = indexDialect(stackEngine());
  await ctx.res.createIndex(events, dialect.eventsMapping);
  await ctx.res.createIndex(profiles, dialect.profilesMapping);
  return { events, profiles };
}

export async function deleteIndices(names: string[]): Promise<void> {
  const es = esClient();
  try {
    for (const index of names) await es.indices.delete({ index }).catch(() => undefined);
  } finally {
    await es.close();
  }
}

// ------------------------------------------------------------------ the ceiling

export interface CeilingResult {
  readonly trials: { batch: number; concurrency: number; rate: number }[];
  readonly best: { batch: number; concurrency: number };
  readonly rate: number;
  readonly ms: number;
  readonly series: { t: number; done: number }[];
  readonly errors: number;
  readonly cpu: ReturnType<typeof cpuBetween>;
}

/** Bulk-loads docs with `concurrency` requests of `batch` documents in flight. */
async function bulkLoad(
  es: Client,
  docs: readonly Doc[],
  names: { events: string; profiles: string },
  batch: number,
  concurrency: number,
): Promise<{ ms: number; series: { t: number; done: number }[]; errors: number }> {
  let nextStart = 0;
  let done = 0;
  let errors = 0;
  const series: { t: number; done: number }[] = [];
  const t0 = performance.now();
  const lane = async () => {
    for (;;) {
      const start = nextStart;
      if (start >= docs.length) return;
      nextStart += batch;
      const slice = docs.slice(start, start + batch);
      const operations = slice.flatMap((d) => [{ [d.op]: { _index: names[d.index], _id: d.id } }, d.source]);
      const res = await es.bulk({ operations, refresh: false });
      for (const item of res.items) {
        const r = item.create ?? item.index;
        if (r && r.status >= 300 && r.status !== 409) errors++;
      }
      done += slice.length;
      series.push({ t: performance.now() - t0, done });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { ms: performance.now() - t0, series, errors };
}

export async function runCeiling(ctx: CeilingContext, docs: readonly Doc[]): Promise<CeilingResult> {
  const es = esClient(120_000);
  const trials: CeilingResult['trials'] = [];
  const sample = docs.slice(0, ctx.quick ? 6_000 : 25_000);
  let k = 0;
  const trial = async (batch: number, concurrency: number) => {
    const names = await createIndices(ctx, `ceil-t${k++}`);
    const r = await bulkLoad(es, sample, names, batch, concurrency);
    await deleteIndices([names.events, names.profiles]);
    const rate = (sample.length * 1000) / r.ms;
    trials.push({ batch, concurrency, rate });
    ctx.log(`    ceiling trial: batch ${batch} × ${concurrency} in flight: ${fmt(rate, 0)} docs/s`);
    return rate;
  };
  // Greedy: the batch size at 2 requests in flight, then the concurrency at that batch size.
  const batches = ctx.quick ? [500, 2000] : [250, 500, 1000, 2000, 5000];
  const concurrencies = ctx.quick ? [1, 4] : [1, 2, 4, 8];
  for (const b of batches) await trial(b, 2);
  const bestBatch = trials.reduce((a, t) => (t.rate > a.rate ? t : a)).batch;
  for (const c of concurrencies) if (c !== 2) await trial(bestBatch, c);
  const best = trials.reduce((a, t) => (t.rate > a.rate ? t : a));

  const names = await createIndices(ctx, 'ceiling');
  const before = await sampleCpu(ctx);
  const r = await bulkLoad(es, docs, names, best.batch, best.concurrency);
  const after = await sampleCpu(ctx);
  await es.close();
  await deleteIndices([names.events, names.profiles]);
  return {
    trials,
    best: { batch: best.batch, concurrency: best.concurrency },
    rate: (docs.length * 1000) / r.ms,
    ms: r.ms,
    series: r.series,
    errors: r.errors,
    cpu: cpuBetween(before, after, ctx.cores),
  };
}

/** A CPU sample of the stack and this process, shaped like a worker sample (for cpuBetween). */
export async function sampleCpu(ctx: CeilingContext): Promise<WorkerMetricsSample> {
  const cpu: Record<string, number> = {};
  for (const [name, pid] of Object.entries(ctx.pids))
    if (pid !== undefined) cpu[name] = cpuSeconds(pid) ?? Number.NaN;
  cpu['bench (this process)'] = cpuSeconds(process.pid) ?? Number.NaN;
  return {
    t: performance.now(),
    done: 0,
    byOutcome: {},
    inFlight: 0,
    lag: 0,
    loopLagMaxMs: Number.NaN,
    loopBusySeconds: Number.NaN,
    rssMb: 0,
    hwmMb: 0,
    cpu,
    coreBusy: coreBusySeconds(),
  };
}
