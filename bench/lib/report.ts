/** What each benchmark hands back, and how it is printed (stdout) and written (Markdown). */

/** What run.ts hands a benchmark that starts workers: the run's mode, where results go, its log, the worker's entry. */
export interface WorkerBenchOptions {
  readonly quick: boolean;
  readonly resultsDir: string;
  readonly log: (line: string) => void;
  /** The worker's command line after node (dist/cli/main.js as shipped, unless run.ts says otherwise). */
  readonly workerEntry?: readonly string[];
}

export interface Table {
  readonly title?: string;
  readonly head: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

/** A target from the issue: `pass` is undefined when it could not be measured in this run. */
export interface Target {
  readonly name: string;
  readonly target: string;
  readonly value: string;
  readonly pass: boolean | undefined;
}

export interface Plot {
  /** File name inside bench/results. */
  readonly file: string;
  readonly title: string;
  readonly svg: string;
}

export interface Section {
  readonly id: string;
  readonly title: string;
  readonly tables: Table[];
  readonly targets: Target[];
  /** Plain sentences: method, caveats, where the time goes. */
  readonly notes: string[];
  readonly plots: Plot[];
  /** Raw numbers, written to latest.json for later comparison. */
  readonly data?: unknown;
}

export const verdict = (pass: boolean | undefined): string =>
  pass === undefined ? 'N/A' : pass ? 'PASS' : 'MISS';

export function textTable(t: Table): string {
  const all = [t.head, ...t.rows];
  const widths = t.head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (i === 0 ? (c ?? '').padEnd(widths[i]!) : (c ?? '').padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = [line(t.head), widths.map((w) => '-'.repeat(w)).join('  '), ...t.rows.map(line)];
  return (t.title ? `${t.title}\n` : '') + out.join('\n');
}

const cell = (s: string) => s.replaceAll('|', '\\|');

export function markdownTable(t: Table): string {
  const head = `| ${t.head.map(cell).join(' | ')} |`;
  const sep = `|${t.head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`;
  const rows = t.rows.map((r) => `| ${r.map(cell).join(' | ')} |`);
  return [...(t.title ? [`**${t.title}**`, ''] : []), head, sep, ...rows].join('\n');
}

export function targetsTable(targets: readonly Target[]): Table {
  return {
    head: ['target', 'wanted', 'measured', 'verdict'],
    rows: targets.map((t) => [t.name, t.target, t.value, verdict(t.pass)]),
  };
}
