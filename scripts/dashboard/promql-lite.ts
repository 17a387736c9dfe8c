/**
 * Just enough PromQL to draw the Grafana dashboard's panels from a series of
 * raw scrapes, without Prometheus: the expression shapes the dashboard uses,
 * and nothing else (anything else is refused, so a new panel cannot be
 * silently drawn wrong).
 *
 *   sum|max|min [by (l, …)] (metric)
 *   sum [by (l, …)] (rate(metric[w]))
 *   histogram_quantile(q, sum by (le[, l, …]) (rate(metric_bucket[w])))
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** One scrape: when, and every sample in it. */
export interface Scrape {
  readonly t: number;
  readonly samples: readonly Sample[];
}

export interface Series {
  /** Label values of the group (the `by` labels). */
  readonly labels: Readonly<Record<string, string>>;
  /** [seconds since the first scrape, value] */
  readonly points: [number, number][];
}

type Agg = 'sum' | 'max' | 'min';

export type Query =
  | { kind: 'instant'; agg: Agg; by: string[]; metric: string }
  | { kind: 'rate'; agg: 'sum'; by: string[]; metric: string; windowS: number }
  | { kind: 'quantile'; q: number; by: string[]; metric: string; windowS: number };

const BY = String.raw`(?:\s+by\s*\(([^)]*)\))?`;
const METRIC = '([a-zA-Z_:][a-zA-Z0-9_:]*)';
const WINDOW = String.raw`\[(\d+)([smh])\]`;
const INSTANT = new RegExp(String.raw`^(sum|max|min)${BY}\s*\(\s*${METRIC}\s*\)$`);
const RATE = new RegExp(String.raw`^sum${BY}\s*\(\s*rate\(\s*${METRIC}${WINDOW}\s*\)\s*\)$`);
const QUANTILE = new RegExp(
  String.raw`^histogram_quantile\(\s*([0-9.]+)\s*,\s*sum${BY}\s*\(\s*rate\(\s*${METRIC}_bucket${WINDOW}\s*\)\s*\)\s*\)$`,
);

const labelsOf = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
const seconds = (n: string, unit: string) => Number(n) * (unit === 'h' ? 3600 : unit === 'm' ? 60 : 1);

export function parseQuery(expr: string): Query {
  const e = expr.trim();
  let m = INSTANT.exec(e);
  if (m) return { kind: 'instant', agg: m[1] as Agg, by: labelsOf(m[2]), metric: m[3]! };
  m = RATE.exec(e);
  if (m)
    return { kind: 'rate', agg: 'sum', by: labelsOf(m[1]), metric: m[2]!, windowS: seconds(m[3]!, m[4]!) };
  m = QUANTILE.exec(e);
  if (m) {
    const by = labelsOf(m[2]);
    if (!by.includes('le')) throw new Error(`histogram_quantile needs "by (le …)": ${expr}`);
    return {
      kind: 'quantile',
      q: Number(m[1]),
      by: by.filter((l) => l !== 'le'),
      metric: m[3]!,
      windowS: seconds(m[4]!, m[5]!),
    };
  }
  throw new Error(`not an expression this page can draw: ${expr}`);
}

/** The metric names an expression reads (histograms by their base name). */
export const metricOf = (q: Query): string => q.metric;

const keyOf = (labels: Record<string, string>, by: string[]) =>
  JSON.stringify(by.map((l) => labels[l] ?? ''));
const pick = (labels: Record<string, string>, by: string[]) =>
  Object.fromEntries(by.map((l) => [l, labels[l] ?? '']));

/** Groups one scrape's samples of `name` by the `by` labels, aggregated with `agg`. */
function grouped(scrape: Scrape, name: string, by: string[], agg: Agg) {
  const out = new Map<string, { labels: Record<string, string>; value: number }>();
  for (const s of scrape.samples) {
    if (s.name !== name || !Number.isFinite(s.value)) continue;
    const k = keyOf(s.labels, by);
    const g = out.get(k);
    if (!g) out.set(k, { labels: pick(s.labels, by), value: s.value });
    else
      g.value =
        agg === 'sum'
          ? g.value + s.value
          : agg === 'max'
            ? Math.max(g.value, s.value)
            : Math.min(g.value, s.value);
  }
  return out;
}

/** Prometheus's histogram_quantile: linear interpolation inside the bucket that holds the rank. */
export function histogramQuantile(q: number, buckets: readonly { le: number; count: number }[]): number {
  const b = [...buckets].sort((x, y) => x.le - y.le);
  const total = b.at(-1)?.count ?? 0;
  if (b.length < 2 || total <= 0) return Number.NaN;
  const rank = q * total;
  let i = b.findIndex((x) => x.count >= rank);
  if (i < 0) i = b.length - 1;
  if (b[i]!.le === Number.POSITIVE_INFINITY) return b[b.length - 2]!.le;
  const lo = i === 0 ? 0 : b[i - 1]!.le;
  const below = i === 0 ? 0 : b[i - 1]!.count;
  const inBucket = b[i]!.count - below;
  return inBucket <= 0 ? lo : lo + (b[i]!.le - lo) * ((rank - below) / inBucket);
}

/**
 * Evaluates a query at every scrape. Rates use the scrape at least `windowS`
 * (capped by `maxWindowS`) before, like Prometheus's rate over a range.
 */
export function evaluate(
  q: Query,
  scrapes: readonly Scrape[],
  maxWindowS = Number.POSITIVE_INFINITY,
): Series[] {
  const t0 = scrapes[0]?.t ?? 0;
  const series = new Map<string, Series>();
  const add = (labels: Record<string, string>, by: string[], t: number, v: number) => {
    const k = keyOf(labels, by);
    let s = series.get(k);
    if (!s) {
      s = { labels: pick(labels, by), points: [] };
      series.set(k, s);
    }
    if (Number.isFinite(v)) s.points.push([(t - t0) / 1000, v]);
  };
  const windowMs = q.kind === 'instant' ? 0 : Math.min(q.windowS, maxWindowS) * 1000;
  let j = 0;
  scrapes.forEach((now, i) => {
    if (q.kind === 'instant') {
      for (const g of grouped(now, q.metric, q.by, q.agg).values()) add(g.labels, q.by, now.t, g.value);
      return;
    }
    while (j < i && scrapes[j + 1]!.t <= now.t - windowMs) j++;
    const before = scrapes[j]!;
    const dt = (now.t - before.t) / 1000;
    if (i === 0 || dt <= 0) return;
    if (q.kind === 'rate') {
      const then = grouped(before, q.metric, q.by, 'sum');
      for (const [k, g] of grouped(now, q.metric, q.by, 'sum')) {
        add(g.labels, q.by, now.t, Math.max(0, g.value - (then.get(k)?.value ?? 0)) / dt);
      }
      return;
    }
    const withLe = [...q.by, 'le'];
    const then = grouped(before, `${q.metric}_bucket`, withLe, 'sum');
    const perGroup = new Map<
      string,
      { labels: Record<string, string>; buckets: { le: number; count: number }[] }
    >();
    for (const [k, g] of grouped(now, `${q.metric}_bucket`, withLe, 'sum')) {
      const gk = keyOf(g.labels, q.by);
      let p = perGroup.get(gk);
      if (!p) {
        p = { labels: pick(g.labels, q.by), buckets: [] };
        perGroup.set(gk, p);
      }
      const le = g.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(g.labels.le);
      p.buckets.push({ le, count: g.value - (then.get(k)?.value ?? 0) });
    }
    for (const p of perGroup.values()) add(p.labels, q.by, now.t, histogramQuantile(q.q, p.buckets));
  });
  return [...series.values()];
}

/** Grafana's legend template: `{{label}}` replaced by the series' label values. */
export const legend = (template: string, labels: Readonly<Record<string, string>>): string =>
  template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l: string) => labels[l] ?? '');
