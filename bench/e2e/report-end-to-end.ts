/** The end-to-end section: ceiling, naive consumer and worker side by side, with their notes and plots. */
import { barChart, lineChart } from '../../harness/plot.js';
import { UNCOMMITTED_PER_HIGH_WATER } from '../../src/pushback/intake/marks.js';
import type { CeilingResult } from '../lib/ceiling.js';
import type { ProfileSummary } from '../lib/profile.js';
import type { Section, Table, Target } from '../lib/report.js';
import { fmt } from '../lib/stats.js';
import { cpuBetween } from '../lib/worker.js';
import { cpuText, latencyCell, latencyWindows, memoryNote, ownViewTable, rateSeries } from './format.js';
import {
  type BurstResult,
  type Ctx,
  type DrainResult,
  type HeapDiagnosis,
  type NaiveResult,
  P99_TARGET_MS,
  RSS_TARGET_MB,
  type WorkerPoint,
} from './types.js';

export function endToEndSection(
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
