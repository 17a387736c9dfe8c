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

/** Parses Prometheus text exposition (0.0.4); a line that is not a sample, a comment or empty throws. */
export function parsePrometheusText(text: string): ParsedText {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP')) continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
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
