import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePortFrom } from '../ports.js';

/**
 * A second, throw-away Elasticsearch node for one test file: same distribution as
 * the stack's (scripts/stack.sh `es_up`), its own data and config, extra static
 * settings (for example a tiny `indexing_pressure.memory.limit`), and a clean stop
 * of the whole process tree. As root it runs as the unprivileged stack user, since
 * Elasticsearch refuses to run as root.
 */
export interface ExtraEsNode {
  readonly url: string;
  readonly port: number;
  readonly logFile: string;
  /** Stops the node and its child processes, then deletes its data. Safe to call twice. */
  stop(): Promise<void>;
  /** SIGSTOP to every process of the node: connections stay open, nothing answers. */
  freeze(): void;
  /** SIGCONT. */
  thaw(): void;
  /** Stops the node (SIGTERM, data kept): connections are refused until `start()`. */
  halt(): Promise<void>;
  /** Starts a halted node again on the same port with the same data. */
  start(): Promise<void>;
}

export interface ExtraEsNodeOptions {
  /** Static node settings added to elasticsearch.yml, e.g. `{ 'indexing_pressure.memory.limit': '1kb' }`. */
  readonly settings?: Readonly<Record<string, string | number | boolean>>;
  /** Default 512m. */
  readonly heap?: string;
  /** The first HTTP port to try; the next free one is used. Default 9210. */
  readonly httpPort?: number;
  /** Default 150 s (a cold JVM on a busy 2-core machine). */
  readonly startTimeoutMs?: number;
}

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const esVersion = process.env.ES_VERSION ?? '9.2.4';
const esUser = process.env.ES_USER ?? 'rxingest';
const cacheDir =
  process.env.RXINGEST_CACHE ??
  (isRoot
    ? '/var/cache/rxingest'
    : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rxingest'));

function javaHome(): string {
  const candidates = [process.env.ES_JAVA_HOME, '/usr/lib/jvm/temurin-25-jdk-amd64'];
  const found = candidates.find((j) => j !== undefined && existsSync(join(j, 'bin', 'java')));
  if (found === undefined) {
    throw new Error('extra Elasticsearch node: no Java 21+ found (set ES_JAVA_HOME)');
  }
  return found;
}

const groupAlive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

async function tail(file: string, lines = 25): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').slice(-lines).join('\n');
}

export async function startExtraEsNode(options: ExtraEsNodeOptions = {}): Promise<ExtraEsNode> {
  const esHome = join(cacheDir, `elasticsearch-${esVersion}`);
  if (!existsSync(join(esHome, 'bin', 'elasticsearch'))) {
    throw new Error(`extra Elasticsearch node: ${esHome} is missing; run \`npm run stack:up\` once first`);
  }
  const jh = javaHome();
  const port = await freePortFrom(options.httpPort ?? 9210);
  // Outside /root and owned by the stack user when root (the user cannot enter /root).
  const base = isRoot ? '/var/lib/rxingest' : tmpdir();
  await mkdir(base, { recursive: true });
  const runDir = await mkdtemp(join(base, `es-extra-${port}-`));
  const logFile = join(runDir, 'stdout.log');
  await cp(join(esHome, 'config'), join(runDir, 'config'), { recursive: true });
  const settings: Record<string, string | number | boolean> = {
    'cluster.name': `rxingest-extra-${port}`,
    'node.name': `rxingest-extra-${port}`,
    'network.host': '127.0.0.1',
    'http.port': port,
    'transport.port': '9310-9349',
    'discovery.type': 'single-node',
    'path.data': join(runDir, 'data'),
    'path.logs': join(runDir, 'logs'),
    'xpack.security.enabled': false,
    'cluster.routing.allocation.disk.threshold_enabled': false,
    'action.destructive_requires_name': false,
    ...options.settings,
  };
  await writeFile(
    join(runDir, 'config', 'elasticsearch.yml'),
    Object.entries(settings)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
      .join(''),
  );
  await mkdir(join(runDir, 'data'));
  await mkdir(join(runDir, 'logs'));
  if (isRoot) await run('chown', ['-R', esUser, runDir]);

  const heap = options.heap ?? '512m';
  const env = [
    `ES_JAVA_HOME=${jh}`,
    `ES_PATH_CONF=${join(runDir, 'config')}`,
    `ES_JAVA_OPTS=-Xms${heap} -Xmx${heap}`,
  ];
  const command = isRoot
    ? ['runuser', '-u', esUser, '--', 'env', ...env, join(esHome, 'bin', 'elasticsearch')]
    : ['env', ...env, join(esHome, 'bin', 'elasticsearch')];
  const url = `http://127.0.0.1:${port}`;
  let pgid = 0;
  let exited = false;
  // Never leave a JVM behind, even if the test process dies without running afterAll.
  const onExit = () => {
    if (pgid && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  };
  process.once('exit', onExit);

  const kill = async () => {
    if (pgid && groupAlive(pgid)) {
      process.kill(-pgid, 'SIGCONT');
      process.kill(-pgid, 'SIGTERM');
    }
    const deadline = Date.now() + 30_000;
    while (pgid && groupAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (pgid && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    while (pgid && groupAlive(pgid)) await new Promise((r) => setTimeout(r, 50));
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', onExit);
    await kill();
    await rm(runDir, { recursive: true, force: true });
  };

  const launch = async () => {
    const out = openSync(logFile, 'a');
    let child: ChildProcess;
    try {
      // Its own process group: stop() signals the launcher, the CLI JVM and the server JVM together.
      child = spawn(command[0]!, command.slice(1), { detached: true, stdio: ['ignore', out, out] });
    } finally {
      closeSync(out);
    }
    pgid = child.pid!;
    exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const deadline = Date.now() + (options.startTimeoutMs ?? 150_000);
    for (;;) {
      if (exited)
        throw new Error(`the JVM exited during startup; last lines of ${logFile}:\n${await tail(logFile)}`);
      try {
        const res = await fetch(`${url}/_cluster/health?wait_for_status=yellow&timeout=1s`, {
          signal: AbortSignal.timeout(2000),
        });
        if (res.ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error(`not yellow on ${url} in time; last lines of ${logFile}:\n${await tail(logFile)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  try {
    await launch();
  } catch (err) {
    await stop();
    throw new Error(`extra Elasticsearch node could not start: ${(err as Error).message}`);
  }
  return {
    url,
    port,
    logFile,
    stop,
    freeze: () => process.kill(-pgid, 'SIGSTOP'),
    thaw: () => process.kill(-pgid, 'SIGCONT'),
    halt: kill,
    start: launch,
  };
}

/**
 * A node that refuses load item by item: a one-thread write pool with a queue of `queueSize`
 * (two unless asked), so concurrent bulks come back 200 with items refused (429
 * es_rejected_execution_exception).
 */
export function startRefusingEsNode(queueSize = 2): Promise<ExtraEsNode> {
  return startExtraEsNode({
    settings: { 'thread_pool.write.size': 1, 'thread_pool.write.queue_size': queueSize },
  });
}
