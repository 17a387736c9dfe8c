/** Pure helpers that turn measured data into cells, notes, series and tables for the sections. */
import { type Buckets, observations, quantile, shareWithin } from '../../harness/prometheus-histograms.js';
import type { Table } from '../lib/report.js';
import { fmt, type Summary, summarize } from '../lib/stats.js';
import type { cpuBetween, MemoryBreakdown } from '../lib/worker.js';
import type { OwnView, WorkerPoint } from './types.js';

/** Records done per second over time, from cumulative samples, in 1 s steps. */
export function rateSeries(
  points: readonly { t: number; done: number }[],
  stepMs = 1_000,
): [number, number][] {
  const out: [number, number][] = [];
  if (points.length < 2) return out;
  let j = 0;
  const t0 = points[0]!.t;
  for (let t = t0 + stepMs; t <= points.at(-1)!.t + 1e-9; t += stepMs) {
    const at = (time: number) => {
      while (j + 1 < points.length && points[j + 1]!.t <= time) j++;
      return points[j]!.done;
    };
    const k = j;
    const a = at(t - stepMs);
    j = k;
    const b = at(t);
    out.push([(t - t0) / 1000, ((b - a) * 1000) / stepMs]);
  }
  return out;
}

export const cpuText = (cpu: ReturnType<typeof cpuBetween>) =>
  cpu
    .filter((c) => Number.isFinite(c.cores))
    .map((c) => `${c.name} ${fmt(c.cores, 2)}`)
    .join(', ');

export const latencyCell = (l: WorkerPoint['latency'], p: 'p50' | 'p99') => {
  if (!l) return 'n/a';
  const missingShare = l.missing / Math.max(1, l.sampled);
  // Samples never seen within the wait are later than anything measured: a p99 with >1% missing is a lower bound.
  if (p === 'p99' && missingShare > 0.01) return `> ${fmt(l.summary.max, 0)}`;
  if (p === 'p50' && missingShare > 0.5) return `> ${fmt(l.summary.max, 0)}`;
  return fmt(l.summary[p], 0);
};

export const mb = (bytes: number) => fmt(bytes / 2 ** 20, 0);

export function memoryNote(what: string, m: MemoryBreakdown | undefined): string[] {
  if (!m) return [];
  const other = m.rss - m.heapTotal - m.external;
  return [
    `Worker memory at its peak RSS (${what}, process.memoryUsage() from a preloaded probe): RSS ${mb(m.rss)} MB = V8 heap ` +
      `${mb(m.heapTotal)} MB (of which in use at that moment, live data and garbage not yet collected, ${mb(m.heapUsed)} MB) + off-heap buffers ${mb(m.external)} MB ` +
      `(array buffers ${mb(m.arrayBuffers)} MB) + code, stacks and the rest ${mb(Math.max(0, other))} MB.`,
  ];
}

/** Latencies grouped by the send time of their message, one summary per window. */
export const OWN_VIEW_BOUNDS_S = [0.05, 0.1, 0.25, 0.5] as const;

/**
 * The latency phase three ways, as shares within the same bounds: the bench's sample (planned
 * send → owner mark seen), the worker's `ts` → indexed for every record, and its `_bulk`
 * requests. p99 < 250 ms is a share of at least 99% within 250 ms.
 */
export function ownViewTable(lat: NonNullable<WorkerPoint['latency']>, own: OwnView): Table {
  const pct = (share: number) => (Number.isNaN(share) ? '–' : `${fmt(share * 100, 1)}%`);
  const toAck = lat.latencies.map((ms, i) => ms - lat.afterAck[i]!);
  /** A sampled segment: its shares within the bounds, then its own p50 and p99. */
  const sampledRow = (what: string, values: readonly number[]) => {
    const within = (s: number) => values.filter((ms) => ms <= s * 1000).length / Math.max(1, values.length);
    const { p50, p99 } = summarize([...values]);
    return [
      what,
      fmt(values.length, 0),
      ...OWN_VIEW_BOUNDS_S.map((s) => pct(within(s))),
      fmt(p50, 0),
      fmt(p99, 0),
    ];
  };
  /** A histogram of the worker's: its shares, and p50 / p99 estimated within their buckets (≈). */
  const histogramRow = (what: string, b: Buckets) => {
    const estimate = (q: number) => {
      const v = quantile(b, q);
      return Number.isNaN(v) ? '–' : `≈ ${fmt(v * 1000, 0)}`;
    };
    return [
      what,
      fmt(observations(b), 0),
      ...OWN_VIEW_BOUNDS_S.map((s) => pct(shareWithin(b, s))),
      estimate(0.5),
      estimate(0.99),
    ];
  };
  const stageRows = [...own.stages]
    .filter(([, b]) => observations(b) > 0)
    .map(([stage, b]) => histogramRow(`    ${stage}, per call (rxingest_stage_duration_seconds)`, b));
  const late = lat.startLateMs > 0 ? `, ts ${fmt(lat.startLateMs, 0)} ms before its planned send` : '';
  return {
    title:
      'The same phase by segment, as shares within a bound: the bench’s sample, the worker’s own histograms (every record)',
    head: [
      'measured',
      'count',
      ...OWN_VIEW_BOUNDS_S.map((s) => `≤ ${fmt(s * 1000, 0)} ms`),
      'p50 ms',
      'p99 ms',
    ],
    rows: [
      sampledRow('bench: planned send → owner mark seen (sampled)', lat.latencies),
      sampledRow('  planned send → producer acknowledged', toAck),
      sampledRow('  acknowledged → owner mark seen (Kafka, worker, Elasticsearch, poll)', lat.afterAck),
      histogramRow(`worker: message ts → indexed (rxingest_e2e_latency_seconds)${late}`, own.indexed),
      histogramRow('  ts → fetched: the send, Kafka, the fetch (rxingest_record_latency_seconds)', own.kafka),
      histogramRow('  fetched → indexed: in the worker', own.worker),
      ...stageRows,
      histogramRow('    _bulk request (rxingest_es_request_duration_seconds)', own.bulk),
    ],
  };
}

export function latencyWindows(
  latencies: readonly number[],
  sentAt: readonly number[],
  windowMs: number,
): { fromMs: number; summary: Summary }[] {
  const byWindow = new Map<number, number[]>();
  latencies.forEach((l, i) => {
    const w = Math.floor(sentAt[i]! / windowMs);
    const list = byWindow.get(w);
    if (list) list.push(l);
    else byWindow.set(w, [l]);
  });
  return [...byWindow.entries()]
    .sort(([a], [b]) => a - b)
    .map(([w, ls]) => ({ fromMs: w * windowMs, summary: summarize(ls) }));
}
