/** The burst section: backlog growth, drain time and memory through the burst. */
import { lineChart } from '../../harness/plot.js';
import { UNCOMMITTED_PER_HIGH_WATER } from '../../src/pushback/intake/marks.js';
import type { Section, Target } from '../lib/report.js';
import { fmt } from '../lib/stats.js';
import { memoryNote } from './format.js';
import { type BurstResult, type Ctx, RSS_TARGET_MB, type WorkerPoint } from './types.js';

export function burstSection(ctx: Ctx, b: BurstResult, shipped: WorkerPoint, avgBytes: number): Section {
  const restRss = b.samples.find((s) => s.t >= b.burstStartT - 500)?.rssMb ?? Number.NaN;
  // A partition pauses at HIGH_WATER records in its graph or UNCOMMITTED_PER_HIGH_WATER × HIGH_WATER
  // not yet committed, but the fetch already under way (up to kafkajs' maxBytesPerPartition, 1 MiB)
  // still comes in: that is the bound on what the worker holds.
  const perFetch = Math.ceil(1_048_576 / avgBytes);
  const maxInFlightBound = (UNCOMMITTED_PER_HIGH_WATER * ctx.defaults.highWater + perFetch) * 8;
  const targets: Target[] = [
    {
      name: 'burst: RSS stays under the bound',
      target: `< ${RSS_TARGET_MB} MB`,
      value: `${fmt(b.peakRssMb, 0)} MB`,
      pass: b.peakRssMb < RSS_TARGET_MB,
    },
    {
      name: `burst: backlog stays in Kafka (records in the worker ≤ (${UNCOMMITTED_PER_HIGH_WATER} × HIGH_WATER + one 1 MiB fetch) × 8 partitions)`,
      target: `≤ ${fmt(maxInFlightBound, 0)}`,
      value: fmt(b.peakInFlight, 0),
      pass: b.peakInFlight <= maxInFlightBound,
    },
    {
      name: 'burst: drains afterwards',
      target: 'drained',
      value: b.drained
        ? `${fmt(b.drainMs / 1000, 1)} s`
        : `not within the wait (${fmt(b.sent - (b.samples.at(-1)?.done ?? 0), 0)} left)`,
      pass: b.drained,
    },
  ];
  const produced = b.produced;
  const producedAt = (t: number) => {
    let v = 0;
    for (const p of produced) if (p.t <= t) v = p.sent;
    return v;
  };
  const series = b.samples.map((s) => ({
    t: s.t / 1000,
    backlog: Math.max(0, producedAt(s.t) - s.done),
    inFlight: s.inFlight,
    rss: s.rssMb,
    done: s.done,
  }));
  const drainRate = b.drained ? b.backlogAtEnd / (b.drainMs / 1000) : Number.NaN;
  return {
    id: 'burst',
    title: 'Burst: 10× the sustainable rate',
    tables: [
      {
        head: [
          'offered msg/s',
          'achieved msg/s',
          'sent',
          'burst s',
          'backlog at end of burst',
          'time to drain s',
          'drain rate /s',
          'peak in worker',
          'RSS at rest MB',
          'peak RSS MB',
        ],
        rows: [
          [
            fmt(b.offered, 0),
            fmt(b.achieved, 0),
            fmt(b.sent, 0),
            fmt(b.burstMs / 1000, 1),
            fmt(b.backlogAtEnd, 0),
            b.drained ? fmt(b.drainMs / 1000, 1) : 'n/a',
            fmt(drainRate, 0),
            fmt(b.peakInFlight, 0),
            fmt(restRss, 0),
            fmt(b.peakRssMb, 0),
          ],
        ],
      },
    ],
    targets,
    notes: [
      `The sustainable rate is the shipped worker's drain rate from the end-to-end drain (${fmt(shipped.rate, 0)} msg/s); the burst offers 10× that from a ` +
        `paced producer with 6 sends in flight (it reached ${fmt(b.achieved, 0)} msg/s, ${fmt(b.achieved / shipped.rate, 1)}× the sustainable rate; ` +
        `its worst lag behind the plan was ${fmt(b.producerMaxLagMs / 1000, 1)} s: on ${ctx.cores} cores the producer, Kafka, the worker and Elasticsearch share the CPU).`,
      `The backlog (produced − done) grows in Kafka while the worker holds at most ${fmt(b.peakInFlight, 0)} records: each partition pauses at ` +
        `HIGH_WATER=${ctx.defaults.highWater} records in its graph or ${UNCOMMITTED_PER_HIGH_WATER} × that not yet committed, and the fetch already under way (≤ 1 MiB, ~${fmt(perFetch, 0)} messages of ` +
        `~${fmt(avgBytes, 0)} bytes) still comes in. Time to drain counts from the end of the burst until the last record is done.`,
      `The producer planned ${fmt(b.planned, 0)} messages for the burst and sent ${fmt(b.sent, 0)}: it stops taking new ones at ` +
        `${fmt(b.durationMs / 1000, 0)} s (what it could not send by then is dropped, so the burst lasts what it should); the sends ` +
        `still in flight were acknowledged by ${fmt(b.burstMs / 1000, 1)} s.`,
      ...memoryNote('burst', b.memory),
    ],
    plots: [
      {
        file: 'burst-backlog.svg',
        title: 'Burst: where the backlog is',
        svg: lineChart({
          title: 'Burst: backlog in Kafka vs records inside the worker',
          xLabel: 'seconds since the worker started',
          yLabel: 'records',
          series: [
            { name: 'backlog (produced − done)', points: series.map((s) => [s.t, s.backlog] as const) },
            { name: 'inside the worker (in flight)', points: series.map((s) => [s.t, s.inFlight] as const) },
          ],
          refs: [
            {
              y: maxInFlightBound,
              label: `(${UNCOMMITTED_PER_HIGH_WATER} × HIGH_WATER + one fetch) × partitions`,
            },
          ],
        }),
      },
      {
        file: 'burst-rss.svg',
        title: 'Burst: worker memory',
        svg: lineChart({
          title: 'Burst: worker RSS (MB)',
          xLabel: 'seconds since the worker started',
          yLabel: 'MB',
          series: [{ name: 'RSS', points: series.map((s) => [s.t, s.rss] as const) }],
          refs: [{ y: RSS_TARGET_MB, label: `${RSS_TARGET_MB} MB target` }],
        }),
      },
    ],
    data: { ...b, samples: undefined, produced: undefined },
  };
}
