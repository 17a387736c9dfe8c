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
import { type Buckets, observations, quantile, shareWithin } from '../harness/prometheus-histograms.js';
import { loadConfig } from '../src/config/config.js';
import { planWorkload } from '../src/generator/workload.js';
import { runBurst } from './e2e/burst.js';
import { latencyCell } from './e2e/format.js';
import { runNaive } from './e2e/naive.js';
import { burstSection } from './e2e/report-burst.js';
import { endToEndSection } from './e2e/report-end-to-end.js';
import { sweepSection } from './e2e/report-sweep.js';
import {
  type BurstResult,
  CLIENTS,
  type Ctx,
  type EndToEndOptions,
  type HeapDiagnosis,
  P99_TARGET_MS,
  QUICK_SWEEP,
  RSS_TARGET_MB,
  SWEEP,
  type WorkerPoint,
} from './e2e/types.js';
import { diagnoseHeap, drainOnce, profileWorker, runWorkerPoint } from './e2e/workers.js';
import { runCeiling } from './lib/ceiling.js';
import { documentOf } from './lib/documents.js';
import type { ProfileSummary } from './lib/profile.js';
import type { Section } from './lib/report.js';
import { ensureStack, kafkaClient, produceAll, RunResources, stackPids } from './lib/stack.js';
import { fmt } from './lib/stats.js';

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
