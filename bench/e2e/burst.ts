/** The burst: 10× the sustainable rate for a while, then the drain of the backlog it left. */
import { describeWorkload, workloadRecords } from '../../src/generator/workload.js';
import { deleteIndices } from '../lib/ceiling.js';
import { producePaced } from '../lib/paced.js';
import { sleep } from '../lib/stack.js';
import { BenchWorker } from '../lib/worker.js';
import { type BurstResult, CLIENTS, type Ctx } from './types.js';
import { workerEnv } from './workers.js';

export async function runBurst(
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
