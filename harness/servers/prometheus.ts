import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../ports.js';

export interface PrometheusOptions {
  /** host:port of each worker's HTTP server, scraped at /metrics as job `rxingest`. */
  readonly targets: readonly string[];
  /** Scrape and rule-evaluation interval. */
  readonly intervalS: number;
  /** Rule files (absolute paths) to load, e.g. ops/prometheus/alerts.yml. */
  readonly ruleFiles?: readonly string[];
  /** Where config, TSDB and log go; a fresh temporary folder (removed on stop) when omitted. */
  readonly dir?: string;
}

/** One series of a query's answer: its labels, and [unix seconds, value] pairs. */
export interface PromSeries {
  readonly metric: Readonly<Record<string, string>>;
  readonly values: readonly [number, number][];
}

interface ApiAnswer<T> {
  status: 'success' | 'error';
  data?: T;
  errorType?: string;
  error?: string;
}
type QueryData =
  | { resultType: 'vector'; result: { metric: Record<string, string>; value: [number, string] }[] }
  | { resultType: 'scalar'; result: [number, string] }
  | { resultType: 'matrix'; result: { metric: Record<string, string>; values: [number, string][] }[] };

export interface PromRule {
  readonly name: string;
  readonly type: 'alerting' | 'recording';
  readonly query: string;
  readonly health: string;
  readonly lastError?: string;
  readonly lastEvaluation: string;
  readonly state?: string;
}

const STARTS = 3;

/**
 * A Prometheus server of its own (Debian's `prometheus` binary): a free loopback port, its own
 * config and TSDB in a folder of its own, so it neither needs nor meets a system Prometheus on
 * :9090. Its HTTP API answers the queries the dashboard and the alert rules make.
 */
export class PrometheusServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    readonly dir: string,
    private readonly ownsDir: boolean,
    private readonly exited: Promise<unknown>,
  ) {}

  static async start(o: PrometheusOptions): Promise<PrometheusServer> {
    const ownsDir = o.dir === undefined;
    const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'rxingest-prometheus-'));
    mkdirSync(dir, { recursive: true });
    const config = join(dir, 'prometheus.yml');
    // JSON is YAML: no YAML writer needed for a config this small.
    writeFileSync(
      config,
      JSON.stringify({
        global: { scrape_interval: `${o.intervalS}s`, evaluation_interval: `${o.intervalS}s` },
        rule_files: o.ruleFiles ?? [],
        scrape_configs: [
          { job_name: 'rxingest', metrics_path: '/metrics', static_configs: [{ targets: o.targets }] },
        ],
      }),
    );
    // The port is free when chosen and may be taken before Prometheus binds it: try again then.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const logFile = join(dir, 'prometheus.log');
      const log = createWriteStream(logFile);
      const child = spawn(
        'prometheus',
        [
          `--config.file=${config}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--storage.tsdb.retention.time=1d',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stdout?.pipe(log);
      child.stderr?.pipe(log);
      const exited = once(child, 'exit');
      const server = new PrometheusServer(child, `http://127.0.0.1:${port}`, dir, ownsDir, exited);
      const gone = exited.then(() => 'exited' as const);
      const ready = server.waitReady(30_000);
      if ((await Promise.race([ready, gone])) === 'ready') return server;
      const tail = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-10).join('\n');
      if (child.exitCode === null) await server.stop();
      if (attempt < STARTS && tail.includes('address already in use')) continue;
      throw new Error(`prometheus did not become ready; ${logFile} ends:\n${tail}`);
    }
  }

  private async waitReady(timeoutMs: number): Promise<'ready' | 'timeout'> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && this.child.exitCode === null) {
      try {
        const res = await fetch(`${this.url}/-/ready`, { signal: AbortSignal.timeout(2_000) });
        if (res.ok) return 'ready';
      } catch {
        // Not listening yet.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    return 'timeout';
  }

  private async api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${path}?${new URLSearchParams(params)}`, {
      signal: AbortSignal.timeout(30_000),
    });
    const answer = (await res.json()) as ApiAnswer<T>;
    if (answer.status !== 'success')
      throw new Error(`prometheus ${path} ${JSON.stringify(params)}: ${answer.errorType}: ${answer.error}`);
    return answer.data as T;
  }

  /** An instant query now (or at `time`, unix seconds); a parse or evaluation error throws. */
  async query(expr: string, time?: number): Promise<PromSeries[]> {
    const data = await this.api<QueryData>('query', {
      query: expr,
      ...(time === undefined ? {} : { time: String(time) }),
    });
    return seriesOf(data);
  }

  /** A range query from `start` to `end` (unix seconds) every `stepS` seconds. */
  async queryRange(expr: string, start: number, end: number, stepS: number): Promise<PromSeries[]> {
    const data = await this.api<QueryData>('query_range', {
      query: expr,
      start: String(start),
      end: String(end),
      step: String(stepS),
    });
    return seriesOf(data);
  }

  /** Every loaded rule with its health, as /api/v1/rules reports them. */
  async rules(): Promise<PromRule[]> {
    const data = await this.api<{ groups: { rules: PromRule[] }[] }>('rules');
    return data.groups.flatMap((g) => g.rules);
  }

  async version(): Promise<string> {
    return (await this.api<{ version: string }>('status/buildinfo')).version;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
      await this.exited;
      clearTimeout(timer);
    }
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

function seriesOf(data: QueryData): PromSeries[] {
  const num = ([t, v]: [number, string]): [number, number] => [t, Number(v)];
  switch (data.resultType) {
    case 'scalar':
      return [{ metric: {}, values: [num(data.result)] }];
    case 'vector':
      return data.result.map((r) => ({ metric: r.metric, values: [num(r.value)] }));
    case 'matrix':
      return data.result.map((r) => ({ metric: r.metric, values: r.values.map(num) }));
  }
}
