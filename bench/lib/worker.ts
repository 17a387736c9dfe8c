/** The shipped worker as a child process, its /metrics and its memory, sampled over time. */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../harness/ports.js';
import { parseMetrics } from '../../harness/prometheus-text.js';
import { spawnWorker } from '../../harness/worker/process.js';
import { coreBusySeconds, cpuSeconds, memoryMb, stackEnv } from './stack.js';

export interface WorkerMetricsSample {
  /** ms since the worker was spawned. */
  readonly t: number;
  /** Records done (every outcome). */
  readonly done: number;
  readonly byOutcome: Readonly<Record<string, number>>;
  readonly inFlight: number;
  readonly lag: number;
  /** The longest the worker's event loop was held since the sample before (prom-client resets it per scrape). */
  readonly loopLagMaxMs: number;
  /** Seconds the worker's main thread has been busy (rxingest_nodejs_eventloop_busy_seconds_total). */
  readonly loopBusySeconds: number;
  readonly rssMb: number;
  readonly hwmMb: number;
  /** CPU seconds used so far, per process: the worker and each server of the stack. */
  readonly cpu: Readonly<Record<string, number>>;
  /** CPU seconds each core of the machine has been busy so far, by core (whoever used it). */
  readonly coreBusy: readonly number[];
}

/** process.memoryUsage() of the worker, from the preloaded memory probe (bytes). */
export interface MemoryBreakdown {
  readonly t: number;
  readonly rss: number;
  readonly heapTotal: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

const PROBE = new URL('./memory-probe.mjs', import.meta.url).href;
const ALLOCATION_PROBE = new URL('./allocation-probe.mjs', import.meta.url).href;

/** The main thread's CPU profile of the BenchWorker `name` (node names it CPU.<date>.<time>.<pid>.<thread>.<seq>). */
export function cpuProfileOf(cpuProfDir: string, name: string): string {
  const dir = join(cpuProfDir, name);
  const main = readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (main === undefined) throw new Error(`no main-thread CPU profile in ${dir}`);
  return join(dir, main);
}

export interface BenchWorkerOptions {
  readonly name: string;
  readonly env: Record<string, string>;
  readonly logDir: string;
  /** Write a CPU profile (node --cpu-prof) under this directory when the worker exits (see cpuProfileOf). */
  readonly cpuProfDir?: string;
  /** Write a sampling allocation profile (bench/lib/allocation-probe.mjs) to this file while it runs. */
  readonly allocationFile?: string;
  /** How to start the worker: default `dist/cli/main.js` if built, else `--import tsx src/cli/main.ts`. */
  readonly entry?: readonly string[];
  /** Extra node flags (diagnostics only, e.g. a heap limit). */
  readonly nodeFlags?: readonly string[];
  /** The stack's server pids, for CPU accounting alongside the worker. */
  readonly stackPids: Readonly<Record<string, number | undefined>>;
  readonly sampleMs?: number;
}

/**
 * node flags for every worker the benchmarks start, from BENCH_WORKER_NODE_FLAGS (space-separated):
 * what a setting only node's command line takes would change, measured the same way.
 */
export const workerNodeFlags = (): string[] =>
  process.env.BENCH_WORKER_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];

/**
 * Runs the worker as `npm start` does (its node flags, then `dist/cli/main.js worker`) with the given environment, and
 * samples its /metrics, its RSS and the CPU time of it and the stack every `sampleMs`.
 */
export class BenchWorker {
  readonly child: ChildProcess;
  readonly samples: WorkerMetricsSample[] = [];
  readonly exited: Promise<number | string>;
  readonly spawnedAt = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private sampling = false;
  private exitCode: number | string | undefined;
  private readonly memoryFile: string;

  private constructor(
    private readonly opts: BenchWorkerOptions,
    private readonly port: number,
  ) {
    // No --cpu-prof-name: every thread of the process (module-loader hooks, transports)
    // writes a profile, and with one fixed name the last thread to exit overwrote the main one.
    const prof = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProfDir, opts.name)}`] : [];
    const allocations = opts.allocationFile ? ['--import', ALLOCATION_PROBE] : [];
    this.memoryFile = join(opts.logDir, `${opts.name}.memory.jsonl`);
    const worker = spawnWorker(
      {
        BENCH_MEMORY_FILE: this.memoryFile,
        ...(opts.allocationFile ? { BENCH_ALLOC_FILE: opts.allocationFile } : {}),
        KAFKA_BROKERS: stackEnv.kafkaBrokers,
        ES_NODE: stackEnv.esNode,
        REDIS_URL: stackEnv.redisUrl,
        LOG_LEVEL: 'warn',
        HTTP_PORT: String(port),
        ...opts.env,
      },
      opts.name,
      {
        via: 'shipped',
        nodeFlags: [
          ...prof,
          ...allocations,
          ...(opts.nodeFlags ?? []),
          ...workerNodeFlags(),
          '--import',
          PROBE,
        ],
        ...(opts.entry ? { entry: opts.entry } : {}),
        logDir: opts.logDir,
      },
    );
    this.child = worker.child;
    this.exited = worker.exited.then((code) => {
      this.exitCode = code;
      return code;
    });
    this.timer = setInterval(() => void this.sample(), opts.sampleMs ?? 250);
  }

  static async start(opts: BenchWorkerOptions): Promise<BenchWorker> {
    return new BenchWorker(opts, await freePort());
  }

  get pid(): number {
    return this.child.pid!;
  }

  get last(): WorkerMetricsSample | undefined {
    return this.samples.at(-1);
  }

  async metrics(): Promise<ReturnType<typeof parseMetrics> | undefined> {
    const text = await this.metricsText();
    return text === undefined ? undefined : parseMetrics(text);
  }

  /** The worker's /metrics as it answers them, or undefined if it does not. */
  async metricsText(): Promise<string | undefined> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.port}/metrics`, {
        signal: AbortSignal.timeout(2_000),
      });
      return res.ok ? await res.text() : undefined;
    } catch {
      return undefined;
    }
  }

  private async sample(): Promise<void> {
    if (this.sampling || this.exitCode !== undefined) return;
    this.sampling = true;
    try {
      const m = await this.metrics();
      const mem = memoryMb(this.pid);
      if (!m || !mem) return;
      const cpu: Record<string, number> = { worker: cpuSeconds(this.pid) ?? Number.NaN };
      for (const [name, pid] of Object.entries(this.opts.stackPids)) {
        if (pid !== undefined) cpu[name] = cpuSeconds(pid) ?? Number.NaN;
      }
      cpu['bench (this process)'] = cpuSeconds(process.pid) ?? Number.NaN;
      this.samples.push({
        t: performance.now() - this.spawnedAt,
        done: m.done,
        byOutcome: m.byOutcome,
        inFlight: m.inFlight,
        lag: m.lag,
        loopLagMaxMs: m.loopLagMaxMs,
        loopBusySeconds: m.loopBusySeconds,
        rssMb: mem.rss,
        hwmMb: mem.hwm,
        cpu,
        coreBusy: coreBusySeconds(),
      });
    } finally {
      this.sampling = false;
    }
  }

  /** Waits until `done` reaches `count` (true), the worker exits or the timeout passes (false). */
  async waitForDone(count: number, timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      if (this.exitCode !== undefined)
        throw new Error(`worker ${this.opts.name} exited (${this.exitCode}); see its log`);
      if ((this.last?.done ?? 0) >= count) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  /** The first sample at which `done` reached `count`, interpolated between samples (ms since spawn). */
  timeOfDone(count: number): number | undefined {
    for (let i = 0; i < this.samples.length; i++) {
      const s = this.samples[i]!;
      if (s.done >= count) {
        const p = this.samples[i - 1];
        if (!p || s.done === p.done) return s.t;
        return p.t + ((count - p.done) / (s.done - p.done)) * (s.t - p.t);
      }
    }
    return undefined;
  }

  /** SIGTERM (drain and commit), SIGKILL after the timeout. Returns the exit code. */
  async stop(timeoutMs = 30_000): Promise<number | string> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.sample();
    if (this.exitCode !== undefined) return this.exitCode;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const code = await this.exited;
    clearTimeout(t);
    return code;
  }

  /** The memory probe's sample with the highest RSS: what the resident memory was made of. */
  memoryAtPeak(): MemoryBreakdown | undefined {
    try {
      const lines = readFileSync(this.memoryFile, 'utf8').split('\n').filter(Boolean);
      let best: MemoryBreakdown | undefined;
      for (const l of lines) {
        const m = JSON.parse(l) as MemoryBreakdown;
        if (!best || m.rss > best.rss) best = m;
      }
      return best;
    } catch {
      return undefined;
    }
  }

  peakRssMb(): number {
    return Math.max(0, ...this.samples.map((s) => Math.max(s.rssMb, s.hwmMb)));
  }
}

/** CPU seconds each process used between two samples, and as a share of the machine's cores. */
export function cpuBetween(a: WorkerMetricsSample, b: WorkerMetricsSample, cores: number) {
  const seconds = (b.t - a.t) / 1000;
  return Object.keys(b.cpu).map((name) => {
    const used = (b.cpu[name] ?? Number.NaN) - (a.cpu[name] ?? Number.NaN);
    return { name, cpuSeconds: used, cores: used / seconds, shareOfMachine: used / seconds / cores };
  });
}
