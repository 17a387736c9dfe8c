import { readFileSync } from 'node:fs';
import { type ParsedText, parsePrometheusText, sampleValue, sumOf } from '../prometheus-text.js';
import type { WorkerProcess } from './process.js';

/** One JSON line of a worker's log. */
export type WorkerLogLine = Record<string, unknown> & { time: number; msg: string; level: number };

/** The worker's log lines so far (a line being written is skipped). */
export function logLines(w: WorkerProcess): WorkerLogLine[] {
  const out: WorkerLogLine[] = [];
  for (const line of readFileSync(w.logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as WorkerLogLine);
    } catch {
      // half-written
    }
  }
  return out;
}

/** The lines whose message starts with `prefix`. */
export const linesStarting = (w: WorkerProcess, prefix: string) =>
  logLines(w).filter((l) => l.msg.startsWith(prefix));

/** The worker's resident set size now (MB), from /proc. */
export function rssMb(w: WorkerProcess): number {
  const status = readFileSync(`/proc/${w.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** One scrape of the worker's /metrics. */
export async function scrape(port: number): Promise<ParsedText> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  return parsePrometheusText(await res.text());
}

/** One scrape's sum of a metric's samples that carry these labels (all of them without labels). */
export async function scrapedSum(
  port: number,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return sumOf(await scrape(port), name, labels);
}

/**
 * Scrapes one gauge of the worker (the one sample with these labels) every `everyMs` into `values` until the returned stop
 * function is called (a scrape that fails is skipped).
 */
export function sampleGauge(
  port: number,
  name: string,
  everyMs: number,
  labels: Record<string, string> = {},
): { values: number[]; stop: () => void } {
  const values: number[] = [];
  const timer = setInterval(() => {
    scrape(port)
      .then((m) => {
        const v = sampleValue(m, name, labels);
        if (v !== undefined) values.push(v);
      })
      .catch(() => undefined);
  }, everyMs);
  return { values, stop: () => clearInterval(timer) };
}
