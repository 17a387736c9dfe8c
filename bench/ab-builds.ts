/**
 * Worker builds side by side in one run, pinned like the partition sweep (Elasticsearch on
 * CPU 0, the rest on CPU 1): the same pre-loaded topics (8 partitions, 200,000 messages of
 * events and of 30% profile updates) drained by each build in turn, the order alternating
 * by round, each round with a raw `_bulk` ceiling of its own. A build is a dist/ of any
 * commit, e.g. for `main`:
 *
 *   d=/tmp/ab/main; mkdir -p $d && git archive main src tsconfig.json tsconfig.build.json package.json | tar -x -C $d
 *   ln -s "$PWD/node_modules" $d/node_modules && (cd $d && npx tsc -p tsconfig.build.json)
 *
 * then, inside the lock:
 *
 *   AB_VARIANTS=main=/tmp/ab/main/dist/cli/main.js,mine=dist/cli/main.js AB_ROUNDS=3 \
 *     node --expose-gc --import tsx bench/ab-builds.ts
 *
 * AB_WORKLOADS=events,mixed narrows the workloads, AB_PARTITIONS and AB_N the topics;
 * AB_PROFILE=1 adds a CPU profile by stage per drain, AB_ALLOC=1 a sampled allocation profile
 * (either slows the drain it watches). BENCH_WORKER_NODE_FLAGS=--trace-gc puts V8's GC trace
 * in each worker's log.
 */
import { join } from 'node:path';
import { summarizeAllocationFile } from './lib/allocations.js';
import { documentOf } from './lib/documents.js';
import { pinElasticsearchApart } from './lib/pinning.js';
import { summarizeProfileFile } from './lib/profile.js';
import { produceAll } from './lib/stack.js';
import { stagesOfProfileFile } from './lib/stages.js';
import { fmt } from './lib/stats.js';
import { cpuProfileOf } from './lib/worker.js';
import { drainWithWorker, drainWorkload, rawCeiling, withMeasureRun } from './lib/worker-vs-ceiling.js';

const variants = (process.env.AB_VARIANTS ?? '').split(',').map((v) => {
  const [name, entry] = v.split('=');
  return { name: name!, entry: [entry!] };
});
const rounds = Number(process.env.AB_ROUNDS ?? 2);
const keys = (process.env.AB_WORKLOADS ?? 'events,mixed').split(',');
const n = Number(process.env.AB_N ?? 200_000);
const partitions = Number(process.env.AB_PARTITIONS ?? 8);
const profile = process.env.AB_PROFILE === '1';
const alloc = process.env.AB_ALLOC === '1';
const log = (l: string) => process.stdout.write(`${l}\n`);
const resultsDir = join(process.cwd(), 'bench', 'results', 'ab');

await withMeasureRun('ab', { quick: false, resultsDir, log }, async (ctx, kafka) => {
  const work = [];
  for (const [key, profileShare, setting] of [
    ['events', 0, { batch: 1000, concurrency: 8 }],
    ['mixed', 0.3, { batch: 1000, concurrency: 4 }],
  ] as const) {
    if (!keys.includes(key)) continue;
    const plan = drainWorkload(n, profileShare);
    const topic = ctx.res.name(`${key}-p${partitions}`);
    await ctx.res.createTopic(topic, partitions);
    await produceAll(kafka, topic, plan);
    work.push({ key, topic, docs: plan.map(documentOf), setting });
  }
  const { elasticsearch, ...others } = ctx.pids;
  const pinning = await pinElasticsearchApart({ elasticsearch: elasticsearch!, others });
  const results: Record<string, { rate: number; ratio: number; us: number; busy: number }[]> = {};
  try {
    for (const w of work) {
      for (const v of variants) {
        (ctx as { workerEntry?: readonly string[] }).workerEntry = v.entry;
        const { run } = await drainWithWorker(ctx, w.topic, n);
        log(`  warm-up ${w.key} ${v.name}: ${fmt(run.rate, 0)} docs/s`);
      }
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? variants : [...variants].reverse();
        const ceiling = await rawCeiling(ctx, w.docs, w.setting);
        for (const v of order) {
          (ctx as { workerEntry?: readonly string[] }).workerEntry = v.entry;
          const cpuProfDir = profile ? join(resultsDir, 'prof') : undefined;
          const allocationFile = alloc ? join(resultsDir, `alloc-${w.key}-${v.name}-${r}.json`) : undefined;
          const { run, name, window } = await drainWithWorker(
            ctx,
            w.topic,
            n,
            cpuProfDir ? { cpuProfDir } : allocationFile ? { allocationFile } : {},
          );
          if (allocationFile) {
            const a = await summarizeAllocationFile(allocationFile, 40);
            log(`    allocated ${fmt(a.totalBytes / n, 0)} bytes/doc`);
            for (const x of a.bySite) log(`      ${fmt(x.bytes / n, 0)} B/doc ${x.what}`);
          }
          const row = {
            rate: run.rate,
            ratio: run.rate / ceiling.rate,
            us: run.cpuUsPerDoc,
            busy: run.threadBusy,
          };
          const key = `${w.key} ${v.name}`;
          results[key] = [...(results[key] ?? []), row];
          log(
            `  ${w.key} round ${r} ${v.name}: ${fmt(run.rate, 0)} docs/s, ceiling ${fmt(ceiling.rate, 0)}, ratio ${fmt(row.ratio, 2)}, ` +
              `worker ${fmt(run.cpuUsPerDoc, 1)} µs/doc (kafka ${fmt(run.othersUsPerDoc.Kafka!, 1)}, redis ${fmt(run.othersUsPerDoc.Redis!, 1)}), busy ${fmt(run.threadBusy, 2)}, rss ${fmt(run.peakRssMb, 0)}`,
          );
          if (cpuProfDir) {
            const file = cpuProfileOf(cpuProfDir, name);
            log(`    profile ${file}`);
            const stages = await stagesOfProfileFile(file, window);
            for (const s of stages) log(`      ${s.stage}: ${fmt(s.ms, 0)} ms (${fmt(s.share * 100, 1)}%)`);
            const sum = await summarizeProfileFile(file, window);
            for (const f of sum.functions) log(`      fn ${f.name} ${f.where}: ${fmt(f.ms, 0)} ms`);
          }
        }
      }
    }
  } finally {
    await pinning.restore();
  }
  log('\nsummary (mean over rounds):');
  for (const [k, rows] of Object.entries(results)) {
    const m = (f: (x: (typeof rows)[0]) => number) => rows.reduce((a, x) => a + f(x), 0) / rows.length;
    log(
      `  ${k}: ${fmt(
        m((x) => x.rate),
        0,
      )} docs/s, ratio ${fmt(
        m((x) => x.ratio),
        3,
      )}, ${fmt(
        m((x) => x.us),
        2,
      )} µs/doc, busy ${fmt(
        m((x) => x.busy),
        2,
      )}  [${rows.map((x) => fmt(x.us, 1)).join(' ')}]`,
    );
  }
});
