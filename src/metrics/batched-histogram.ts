import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** One line of the exposition, as prom-client's registry reads it from `get()`. */
interface Sample {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName: string;
}

/** What prom-client's registry formats (its types say `MetricType`, an enum; it reads a string). */
export interface HistogramSnapshot {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly aggregator: 'sum';
  readonly values: readonly Sample[];
}

/** One label set's counts: per bucket (not cumulative), their sum and count. */
interface Series {
  readonly labels: Labels;
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram fed a batch of millisecond latencies at a time, with its label sets
 * fixed when it is made. The worker observes two or three latencies per indexed record;
 * prom-client's `observe` builds a labels object and a hash key and looks each bound up by
 * its string name on every call (garbage per document, and most of the metrics stage's
 * time per document), and has no call that takes many values. Here a value costs a walk
 * over the bounds and two additions, and nothing is allocated.
 *
 * It serialises through prom-client's own registry: the registry asks a metric for `get()`
 * and formats what it returns, which is built here in prom-client's histogram shape
 * (buckets cumulative with `le` first, then `+Inf`, `_sum` and `_count`, per label set), so
 * `/metrics` reads the same as for a prom-client `Histogram` (a unit test compares the two).
 */
export class BatchedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** As prom-client's metrics keep them: the label names the label sets use. */
  readonly labelNames: readonly string[];
  private readonly series: Series[];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    labelSets: readonly Labels[],
    registry: Registry,
  ) {
    if (labelSets.length === 0) throw new Error(`histogram ${name} needs at least one label set`);
    this.labelNames = [...new Set(labelSets.flatMap((labels) => Object.keys(labels)))];
    this.series = labelSets.map((labels) => ({
      labels,
      counts: new Float64Array(bounds.length),
      sum: 0,
      count: 0,
    }));
    // The registry keeps anything with a name and get(); prom-client's types list only its own classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /**
   * Latencies in ms, as seconds, into the label set at `index` (the order given when it was
   * made): a negative one (clock skew) as 0, a non-number not at all.
   */
  observeMs(index: number, ms: readonly number[]): void {
    const s = this.series[index];
    if (s === undefined) throw new RangeError(`histogram ${this.name} has no label set ${index}`);
    const bounds = this.bounds;
    for (const v of ms) {
      if (!Number.isFinite(v)) continue;
      const seconds = v > 0 ? v / 1000 : 0;
      let b = 0;
      while (b < bounds.length && seconds > bounds[b]!) b++;
      if (b < bounds.length) s.counts[b]!++;
      s.sum += seconds;
      s.count++;
    }
  }

  async get(): Promise<HistogramSnapshot> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series) {
      let cumulative = 0;
      this.bounds.forEach((le, b) => {
        cumulative += s.counts[b]!;
        values.push({ labels: { le, ...s.labels }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: bucket });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const s of this.series) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
