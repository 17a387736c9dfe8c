/**
 * Reading a worker's /metrics (Prometheus text exposition 0.0.4): the one parser the tests, the
 * benchmarks and the scripts share, and the readings they make of its samples.
 */

/** One sample line of a scrape. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface ParsedText {
  /** `# TYPE` lines: metric family → counter, gauge, histogram… */
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?[ \t]*$/;
/** Go's ParseFloat as Prometheus reads a value: decimals, exponents, ±Inf and NaN in any case. */
const VALUE = /^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$/i;

/**
 * Parses Prometheus text exposition (0.0.4): a line that is not a sample, a comment or empty, a
 * label set that does not parse to its end, or a value that is not a number throws, naming the line.
 */
export function parsePrometheusText(text: string): ParsedText {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || (line.startsWith('#') && !line.startsWith('# TYPE '))) continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m || !VALUE.test(m[3]!)) throw new Error(`not a Prometheus sample line: ${line}`);
    samples.push({ name: m[1]!, labels: labelsOf(m[2] ?? '', line), value: sampleNumber(m[3]!) });
  }
  return { types, samples };
}

function labelsOf(block: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const label = /[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*(,|$)/y;
  while (label.lastIndex < block.length) {
    const start = label.lastIndex;
    const l = label.exec(block);
    if (!l) {
      if (block.slice(start).trim() === '') break;
      throw new Error(`not a Prometheus label set: ${line}`);
    }
    if (Object.hasOwn(labels, l[1]!)) throw new Error(`label ${l[1]} twice: ${line}`);
    labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    if (l[3] === '') break;
  }
  return labels;
}

function sampleNumber(literal: string): number {
  const lower = literal.toLowerCase().replace(/^\+/, '');
  if (lower === 'nan') return Number.NaN;
  if (lower === 'inf' || lower === 'infinity') return Number.POSITIVE_INFINITY;
  if (lower === '-inf' || lower === '-infinity') return Number.NEGATIVE_INFINITY;
  return Number(literal);
}

/** The value of the one sample with this name whose labels include `labels`; undefined if none. */
export function sampleValue(
  text: ParsedText,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples(text, name, labels);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

export function samples(text: ParsedText, name: string, labels: Record<string, string> = {}): Sample[] {
  return text.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** Sum of the matching samples' values (0 when none). */
export const sumOf = (text: ParsedText, name: string, labels: Record<string, string> = {}): number =>
  samples(text, name, labels).reduce((a, s) => a + s.value, 0);

/** What the benchmarks follow of a worker over time: records done (by outcome), in flight, lag, its loop. */
export interface WorkerTotals {
  done: number;
  byOutcome: Record<string, number>;
  inFlight: number;
  lag: number;
  loopLagMaxMs: number;
  loopBusySeconds: number;
}

/** Sums a scrape's samples by metric name (and, for records done, by outcome); unknown loop figures are NaN. */
export function parseMetrics(text: string): WorkerTotals {
  const parsed = parsePrometheusText(text);
  const byOutcome: Record<string, number> = {};
  for (const s of samples(parsed, 'rxingest_records_done_total')) {
    const outcome = s.labels.outcome ?? '?';
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + s.value;
  }
  const last = (name: string) => samples(parsed, name).at(-1)?.value ?? Number.NaN;
  return {
    done: sumOf(parsed, 'rxingest_records_done_total'),
    byOutcome,
    inFlight: sumOf(parsed, 'rxingest_in_flight'),
    lag: sumOf(parsed, 'rxingest_consumer_lag'),
    loopLagMaxMs: last('rxingest_nodejs_eventloop_lag_max_seconds') * 1000,
    loopBusySeconds: last('rxingest_nodejs_eventloop_busy_seconds_total'),
  };
}
