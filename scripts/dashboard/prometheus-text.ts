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
