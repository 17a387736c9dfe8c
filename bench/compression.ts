/**
 * `npm run bench -- --only compression`: what compressed input costs the worker. The same
 * events go into one topic per codec, each sent by kcat (librdkafka, the same producer and
 * batching for all: uncompressed, gzip, snappy, lz4, zstd), and the worker as shipped drains
 * each topic in turn, the order rotated every round, so that the machine's drift falls on
 * all alike. Uncompressed is the baseline of the same run.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { barChart } from '../harness/plot.js';
import { CODECS, type Codec, produceWithKcat } from '../harness/producers/compressing-producers.js';
import { planWorkload } from '../src/generator/workload.js';
import { deleteIndices } from './lib/ceiling.js';
import { drainRate, drainWindow } from './lib/drain.js';
import type { Section, Table, WorkerBenchOptions } from './lib/report.js';
import { ensureStack, kafkaClient, RunResources, stackPids } from './lib/stack.js';
import { fmt, median } from './lib/stats.js';
import { BenchWorker } from './lib/worker.js';
import { benchWorkerEnv } from './lib/worker-env.js';

export type CompressionOptions = WorkerBenchOptions;

type Compression = Codec | 'none';
const COMPRESSIONS: readonly Compression[] = ['none', ...CODECS];

interface Drain {
  readonly rate: number;
  readonly drained: boolean;
  readonly cpuUsPerDoc: number;
  readonly threadUsPerDoc: number;
  readonly peakRssMb: number;
}

/** Bytes of the topic's log segments in the local stack's data directory (NaN elsewhere). */
function bytesOnDisk(topic: string): number {
  const data = join(process.env.RXINGEST_STACK_DIR ?? '.stack', 'kafka', 'data');
  if (!existsSync(data)) return Number.NaN;
  let bytes = 0;
  for (const dir of readdirSync(data)) {
    if (!dir.startsWith(`${topic}-`) || !/-\d+$/.test(dir)) continue;
    for (const f of readdirSync(join(data, dir)))
      if (f.endsWith('.log')) bytes += statSync(join(data, dir, f)).size;
  }
  return bytes;
}

export async function compressionBenchmark(o: CompressionOptions): Promise<Section> {
  await ensureStack();
  await promisify(execFile)('kcat', ['-V']).catch(() => {
    throw new Error('the compression benchmark sends with kcat: apt-get install kcat (or brew install kcat)');
  });
  const n = o.quick ? 20_000 : 100_000;
  const rounds = o.quick ? 1 : 3;
  const runId = `comp-${randomBytes(3).toString('hex')}`;
  const res = new RunResources(runId, kafkaClient('rxingest-bench-compression'));
  const logDir = join(o.resultsDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const pids = await stackPids();
  const plan = planWorkload({
    seed: 11,
    count: n,
    clients: 10_000,
    profileShare: 0,
    duplicateShare: 0,
    poisonShare: 0,
  });
  const topics = new Map<Compression, string>();
  const bytes = new Map<Compression, number>();
  const drains = new Map<Compression, Drain[]>(COMPRESSIONS.map((c) => [c, []]));
  let runs = 0;
  try {
    for (const c of COMPRESSIONS) {
      const topic = res.name(c);
      await res.createTopic(topic, 8);
      await produceWithKcat(topic, plan, c);
      topics.set(c, topic);
      bytes.set(c, bytesOnDisk(topic));
      o.log(`  ${c}: ${fmt(n, 0)} events sent by kcat, ${fmt(bytes.get(c)! / 2 ** 20, 1)} MiB on disk`);
    }
    // Round 0 is one uncompressed drain, not counted: the run's first drain was the slowest
    // (19,340 docs/s against 29,668 for the same topic in the next round).
    for (let round = 0; round <= rounds; round++) {
      const order =
        round === 0
          ? ['none' as const]
          : COMPRESSIONS.map((_, i) => COMPRESSIONS[(i + round) % COMPRESSIONS.length]!);
      for (const c of order) {
        const tag = `w${runs++}`;
        const worker = await BenchWorker.start({
          entry: o.workerEntry,
          name: `${runId}-${tag}`,
          logDir,
          stackPids: pids,
          env: benchWorkerEnv(res, tag, [topics.get(c)!]),
        });
        let drained = false;
        try {
          drained = await worker.waitForDone(n, o.quick ? 60_000 : 180_000);
        } finally {
          await worker.stop(30_000);
        }
        await deleteIndices([res.name(`${tag}-events`), res.name(`${tag}-profiles`)]);
        const { rate } = drainRate(worker, n);
        const { perDoc, threadBusy } = drainWindow(worker, n);
        const d: Drain = {
          rate,
          drained,
          cpuUsPerDoc: perDoc('worker'),
          threadUsPerDoc: (threadBusy * 1e6) / rate,
          peakRssMb: worker.peakRssMb(),
        };
        if (round > 0) drains.get(c)!.push(d);
        o.log(
          `  ${round === 0 ? 'warm-up, ' : ''}${c}: ${fmt(d.rate, 0)} docs/s, worker ${fmt(d.cpuUsPerDoc, 1)} µs CPU/doc, main thread ${fmt(d.threadUsPerDoc, 1)} µs/doc, peak RSS ${fmt(d.peakRssMb, 0)} MB${drained ? '' : ' (not drained in time)'}`,
        );
      }
    }
  } finally {
    o.log('  cleaning up the run’s topics, indices, groups and Redis keys …');
    const problems = await res.cleanUp();
    if (problems.length > 0) o.log(`  clean-up problems: ${problems.join('; ')}`);
  }
  return section(n, rounds, bytes, drains);
}

function section(
  n: number,
  rounds: number,
  bytes: ReadonlyMap<Compression, number>,
  drains: ReadonlyMap<Compression, readonly Drain[]>,
): Section {
  const med = (c: Compression, f: (d: Drain) => number) => median(drains.get(c)!.map(f));
  const base = med('none', (d) => d.rate);
  const table: Table = {
    title: `${fmt(n, 0)} events per topic, 8 partitions, sent by kcat; after one uncompressed drain not counted, ${rounds} drain(s) of each, the order rotated`,
    head: [
      'input batches',
      'on disk (MiB)',
      'drains (docs/s)',
      'median ÷ uncompressed',
      'worker CPU (µs/doc)',
      'main thread busy (µs/doc)',
      'peak RSS (MB)',
    ],
    rows: COMPRESSIONS.map((c) => [
      c === 'none' ? 'uncompressed (baseline)' : c,
      fmt(bytes.get(c)! / 2 ** 20, 1),
      drains
        .get(c)!
        .map((d) => fmt(d.rate, 0) + (d.drained ? '' : '*'))
        .join(', '),
      fmt(med(c, (d) => d.rate) / base, 2),
      fmt(
        med(c, (d) => d.cpuUsPerDoc),
        1,
      ),
      fmt(
        med(c, (d) => d.threadUsPerDoc),
        1,
      ),
      fmt(Math.max(...drains.get(c)!.map((d) => d.peakRssMb)), 0),
    ]),
  };
  return {
    id: 'compression',
    title: 'Compressed input: the worker draining the same events in batches of each codec',
    tables: [table],
    targets: [],
    notes: [
      'kafkajs reads only gzip by itself; rxingest gives it snappy and lz4 (native, decompressed off the event loop) and zstd (a pure-JavaScript decoder, on it).',
      'Each drain is a fresh worker as shipped with its own group and indices; CPU is the worker process’s (all its threads), the main thread’s busy time is its event-loop utilisation. * = not drained within the cap.',
    ],
    plots: [
      {
        file: 'compression.svg',
        title: 'Drain rate by input compression (median)',
        svg: barChart({
          title: 'Drain rate by input compression (median)',
          categories: COMPRESSIONS.map((c) => c),
          series: [{ name: 'docs/s', values: COMPRESSIONS.map((c) => med(c, (d) => d.rate)) }],
          unit: 'docs/s',
        }),
      },
    ],
    data: { n, rounds, bytes: Object.fromEntries(bytes), drains: Object.fromEntries(drains) },
  };
}
