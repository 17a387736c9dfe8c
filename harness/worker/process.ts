import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stackEnv } from '../stack.js';
import { shippedEnv, shippedNodeFlags } from './shipped-launch.js';

/**
 * A real worker process (`rxingest worker` through tsx, no build step, unless asked), its log in
 * .stack/logs: the one way the tests, the benchmarks and the scripts start one.
 */
export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>;
  /** The largest resident set size seen so far (MB), sampled every 250 ms from /proc. */
  maxRssMb(): number;
}

/**
 * A worker's own deployment on the local stack: its input topic `<name>.in`, group, output
 * topics, indices and Redis marks all under `name`, a short session (quick rebalances).
 */
export function isolatedWorkerEnv(name: string): Record<string, string> {
  return {
    INGEST_TOPICS: `${name}.in`,
    INGEST_GROUP: `${name}-group`,
    DLQ_TOPIC: `${name}.dlq`,
    TRIGGERS_TOPIC: `${name}.triggers`,
    PROFILES_INDEX: `${name}-profiles`,
    EVENTS_INDEX: `${name}-events`,
    KAFKA_BROKERS: stackEnv.kafkaBrokers,
    ES_NODE: stackEnv.esNode,
    REDIS_URL: stackEnv.redisUrl,
    REDIS_KEY_PREFIX: `${name}:`,
    KAFKA_SESSION_TIMEOUT_MS: '6000',
  };
}

/**
 * The settings the test deployments tune for speed (quicker commits, rebalances, retries and
 * dedup window). A test of a shipped default takes them out, so that the worker runs on every
 * default except where its servers, names and ports are.
 */
export const SPEED_TUNINGS = [
  'COMMIT_INTERVAL_MS',
  'DEDUP_WINDOW_MS',
  'RETRY_MAX_MS',
  'KAFKA_SESSION_TIMEOUT_MS',
] as const;

/** `env` without the speed tunings: a worker on its shipped defaults. */
export function atShippedDefaults(env: Readonly<Record<string, string>>): Record<string, string> {
  const out = { ...env };
  for (const v of SPEED_TUNINGS) delete out[v];
  return out;
}

export interface SpawnWorkerOptions {
  /**
   * `tsx` (default): `node --import tsx src/cli/main.ts`, no build step. `shipped`: node with
   * the flags and environment `npm start` gives it, on `dist/cli/main.js` when built (else tsx).
   * `npm-start`: the way the README runs it, `npm start` (its prestart builds dist/, then the
   * script execs `node dist/cli/main.js worker`); `child` is then the npm process.
   */
  readonly via?: 'tsx' | 'shipped' | 'npm-start';
  /** node flags before the entry (`tsx` and `shipped`): profiles, probes, a heap limit. */
  readonly nodeFlags?: readonly string[];
  /** The entry for `shipped`, in place of `dist/cli/main.js` (or tsx when dist/ is not built). */
  readonly entry?: readonly string[];
  /** The command and its options, `worker` by default (e.g. `['demo', '--rate', '2000']`). */
  readonly command?: readonly string[];
  /** Where the log `<name>.log` goes: this process's .stack/logs by default. */
  readonly logDir?: string;
  /** Also copy the process's output to this process's own (a script a person watches). */
  readonly echo?: boolean;
  /** Variables taken out of the environment, to run on their defaults (HTTP_PORT included). */
  readonly unset?: readonly string[];
  /** Where it runs (an installed copy, the repository's root); the current directory by default. */
  readonly cwd?: string;
  /**
   * Another way in, as an installed copy starts it: this command, in this directory, as this
   * user, with only `env` (and PATH) for an environment, as a container gives it. Replaces `via`.
   */
  readonly launch?: WorkerLaunch;
}

export interface WorkerLaunch {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly uid?: number;
  readonly gid?: number;
  /** Start from an empty environment (PATH kept) rather than the test's own. */
  readonly cleanEnv?: boolean;
}

/** The command line of a worker started `via`, with `nodeFlags` and `command` (see SpawnWorkerOptions). */
function commandLine(o: SpawnWorkerOptions, cwd: string): [string, string[], Record<string, string>] {
  const command = o.command ?? ['worker'];
  const flags = o.nodeFlags ?? [];
  if (o.launch) return [o.launch.command, [...o.launch.args], {}];
  switch (o.via ?? 'tsx') {
    case 'npm-start':
      return ['npm', ['start'], {}];
    case 'shipped': {
      const entry =
        o.entry ??
        (existsSync(join(cwd, 'dist/cli/main.js'))
          ? ['dist/cli/main.js']
          : ['--import', 'tsx', 'src/cli/main.ts']);
      return [process.execPath, [...shippedNodeFlags(), ...flags, ...entry, ...command], shippedEnv()];
    }
    case 'tsx':
      return [process.execPath, [...flags, '--import', 'tsx', 'src/cli/main.ts', ...command], {}];
  }
}

export function spawnWorker(
  env: Record<string, string>,
  name: string,
  options: SpawnWorkerOptions = {},
): WorkerProcess {
  const { unset = [], launch } = options;
  const cwd = launch?.cwd ?? options.cwd ?? process.cwd();
  const dir = options.logDir ?? join(process.cwd(), '.stack', 'logs');
  mkdirSync(dir, { recursive: true });
  const logFile = join(dir, `${name}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  const [command, args, shipped] = commandLine(options, cwd);
  // HTTP off unless a test asks for it: the default port would clash between workers.
  const base: NodeJS.ProcessEnv = launch?.cleanEnv ? { PATH: process.env.PATH } : process.env;
  const childEnv: NodeJS.ProcessEnv = { ...base, ...shipped, LOG_LEVEL: 'info', HTTP_PORT: '0', ...env };
  for (const v of unset) delete childEnv[v];
  const child = spawn(command, args, {
    env: childEnv,
    cwd,
    uid: launch?.uid,
    gid: launch?.gid,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  if (options.echo) {
    child.stdout?.pipe(process.stdout);
    child.stderr?.pipe(process.stderr);
  }
  let maxRss = 0;
  const sample = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      maxRss = Math.max(maxRss, kb / 1024);
    } catch {
      // Gone already.
    }
  }, 250);
  sample.unref();
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      clearInterval(sample);
      resolve(code ?? signal ?? 'unknown');
    });
  });
  return { child, logFile, exited, maxRssMb: () => maxRss };
}

/** The last lines of a worker's log, for a failure message. */
export function logTail(worker: WorkerProcess, lines = 15): string {
  try {
    return readFileSync(worker.logFile, 'utf8')
      .trimEnd()
      .split('\n')
      .slice(-lines)
      .map((l) => l.slice(0, 400))
      .join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * `work` (a wait on some condition), failed at once if the worker exits first: a polling wait
 * would otherwise go on until its own timeout, and a test timeout says nothing of why.
 */
export async function whileRunning<T>(worker: WorkerProcess, what: string, work: Promise<T>): Promise<T> {
  const died = worker.exited.then((code) => {
    throw new Error(`the worker exited (${code}) while ${what}; ${worker.logFile} ends:\n${logTail(worker)}`);
  });
  died.catch(() => {}); // the race below reports it, or the work finished first
  return Promise.race([work, died]);
}
