import { parsePrometheusText } from './prometheus-text.js';

/**
 * A prom-client histogram read from the worker's /metrics text: the cumulative count of each
 * bucket of one series, so that a phase's own observations are `after − before`.
 */
export type Buckets = ReadonlyMap<number, number>;

/** The buckets (`le` → cumulative count, `+Inf` as Infinity) of `name` whose labels include `labels`. */
export function histogramBuckets(text: string, name: string, labels: Record<string, string> = {}): Buckets {
  const out = new Map<number, number>();
  for (const s of parsePrometheusText(text).samples) {
    const le = s.labels.le;
    if (s.name !== `${name}_bucket` || le === undefined) continue;
    if (!Object.entries(labels).every(([k, v]) => s.labels[k] === v)) continue;
    const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
    out.set(bound, (out.get(bound) ?? 0) + s.value);
  }
  return out;
}

/** What was observed between two readings of the same series. */
export function bucketsBetween(before: Buckets, after: Buckets): Buckets {
  const out = new Map<number, number>();
  for (const [le, n] of after) out.set(le, n - (before.get(le) ?? 0));
  return out;
}

/** Observations in the buckets. */
export const observations = (b: Buckets): number => b.get(Number.POSITIVE_INFINITY) ?? 0;

/** The share of observations at most `le` (a bucket's bound), or NaN without observations or without that bucket. */
export function shareWithin(b: Buckets, le: number): number {
  const total = observations(b);
  const within = b.get(le);
  return total > 0 && within !== undefined ? within / total : Number.NaN;
}

/**
 * The q-quantile (0–1) estimated as Prometheus's `histogram_quantile` does: linear within the
 * bucket it falls in, from 0 for the first bucket; the highest finite bound when it falls in
 * `+Inf`; NaN without observations.
 */
export function quantile(b: Buckets, q: number): number {
  const total = observations(b);
  if (!(total > 0)) return Number.NaN;
  const bounds = [...b.keys()].sort((x, y) => x - y);
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const le of bounds) {
    const count = b.get(le)!;
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lower;
      return count === below ? le : lower + ((le - lower) * (rank - below)) / (count - below);
    }
    lower = le;
    below = count;
  }
  return lower;
}
