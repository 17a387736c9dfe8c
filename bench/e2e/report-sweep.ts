/** The batch-size sweep section: throughput and latency per BATCH_MAX at the same offered load. */
import { lineChart } from '../../harness/plot.js';
import type { Section } from '../lib/report.js';
import { fmt } from '../lib/stats.js';
import { latencyCell } from './format.js';
import type { Ctx, WorkerPoint } from './types.js';

export function sweepSection(ctx: Ctx, points: WorkerPoint[], shipped: WorkerPoint): Section {
  const best = points.reduce((a, p) => (p.rate > a.rate ? p : a), points[0]!);
  const rows = points.map((p) => [
    String(p.batchMax) + (p.batchMax === ctx.defaults.batchMax ? ' (shipped)' : ''),
    fmt(p.rate, 0),
    fmt(p.rate / shipped.rate, 2),
    p.drained ? 'yes' : 'no',
    latencyCell(p.latency, 'p50'),
    latencyCell(p.latency, 'p99'),
    p.latency ? fmt(p.latency.missing, 0) : 'n/a',
    fmt(p.peakRssMb, 0),
    fmt(p.cpu.find((c) => c.name === 'worker')?.cores ?? Number.NaN, 2),
    fmt(p.liveCpu?.find((c) => c.name === 'worker')?.cores ?? Number.NaN, 2),
  ]);
  const offered = shipped.latency?.offered ?? Number.NaN;
  const notes = [
    `Each point: a fresh worker drains the same ${fmt(shipped.drainDone, 0)}-message backlog (fresh group and indices), then takes ` +
      `${fmt(offered, 0)} msg/s (half the shipped config's drain rate, the same load for every point) on a live topic for the latency. ` +
      'A point whose backlog did not drain in time is rated over the time it had, and its latency is measured by a second, fresh worker.',
    `Highest throughput: BATCH_MAX=${best.batchMax} (${fmt(best.rate, 0)} docs/s).`,
    ...points.flatMap((p) => p.notes),
  ];
  return {
    id: 'sweep',
    title: 'Batch-size sweep (BATCH_MAX)',
    tables: [
      {
        head: [
          'BATCH_MAX',
          'docs/s',
          'vs shipped',
          'drained',
          `p50 ms @${fmt(offered, 0)}/s`,
          `p99 ms @${fmt(offered, 0)}/s`,
          'missing samples',
          'peak RSS MB',
          'worker cores',
        ],
        rows,
      },
    ],
    targets: [],
    notes,
    plots: [
      {
        file: 'sweep-throughput.svg',
        title: 'Batch-size sweep: throughput',
        svg: lineChart({
          title: 'Worker throughput by BATCH_MAX (draining a backlog)',
          xLabel: 'BATCH_MAX (log scale)',
          yLabel: 'documents/s',
          xLog: true,
          dots: true,
          series: [{ name: 'documents/s', points: points.map((p) => [p.batchMax, p.rate] as const) }],
        }),
      },
      {
        file: 'sweep-latency.svg',
        title: 'Batch-size sweep: latency',
        svg: lineChart({
          title: `Produce → indexed latency by BATCH_MAX at ${fmt(offered, 0)} msg/s (log scale)`,
          xLabel: 'BATCH_MAX (log scale)',
          yLabel: 'ms',
          xLog: true,
          yLog: true,
          dots: true,
          series: [
            {
              name: 'p50',
              points: points
                .filter((p) => p.latency)
                .map((p) => [p.batchMax, p.latency!.summary.p50] as const),
            },
            {
              name: 'p99',
              points: points
                .filter((p) => p.latency)
                .map((p) => [p.batchMax, p.latency!.summary.p99] as const),
            },
          ],
          refs: [{ y: 250, label: 'p99 target 250 ms' }],
        }),
      },
    ],
    data: points.map((p) => ({
      batchMax: p.batchMax,
      rate: p.rate,
      drained: p.drained,
      latency: p.latency?.summary,
      missing: p.latency?.missing,
      peakRssMb: p.peakRssMb,
      cpu: p.cpu,
    })),
  };
}
