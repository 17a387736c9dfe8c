import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePortFrom } from '../../../harness/ports.js';
import type { SearchEngine } from '../../../src/clients/search-engine.js';

const run = promisify(execFile);

/** A search engine the compatibility run starts on a port of its own, next to the shared stack. */
export interface EngineSpec {
  readonly engine: SearchEngine;
  readonly port: number;
  /** TLS and basic auth, user admin: OpenSearch's security plugin, Elasticsearch's x-pack security. */
  readonly secure?: boolean;
  /** Start-up settings added to the engine's configuration file. */
  readonly settings?: Readonly<Record<string, string | number>>;
}

export interface EngineServer {
  readonly url: string;
  /** Secured: the CA's PEM file and admin's password. */
  readonly caFile?: string;
  readonly password?: string;
  /** Secured Elasticsearch: an API key of admin's (encoded). */
  readonly apiKey?: string;
  /** From `up` to the cluster answering yellow (the first run includes the download). */
  readonly startMs: number;
  stop(): Promise<void>;
  /** SIGSTOP to every process of the engine: connections stay open, nothing answers. */
  freeze(): Promise<void>;
  /** SIGCONT to them. */
  thaw(): Promise<void>;
}

/** The process the stack started (its pid file) and all its descendants (launcher, JVM). */
async function processTree(root: number): Promise<number[]> {
  const { stdout } = await run('ps', ['-e', '-o', 'pid=,ppid=']);
  const children = new Map<number, number[]>();
  for (const line of stdout.trim().split('\n')) {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number) as [number, number];
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/**
 * `scripts/stack.sh up` for one engine on `spec.port` (or the next free port, when another run
 * holds it: two runs never share an engine, since each stops its own), with its own state folder and a small
 * heap; the Kafka and Redis of the running stack are used as they are. `stop` takes down only
 * that engine (`down elasticsearch` in its state folder).
 */
export async function startEngine(spec: EngineSpec): Promise<EngineServer> {
  const port = await freePortFrom(spec.port);
  const stateDir = join(tmpdir(), `rxingest-engine-${port}`);
  const env = {
    ...process.env,
    RXINGEST_STACK_MODE: 'native',
    RXINGEST_STACK_DIR: stateDir,
    RXINGEST_SEARCH_ENGINE: spec.engine.product,
    SEARCH_VERSION: spec.engine.version,
    ES_PORT: String(port),
    ES_HEAP: '512m',
    RXINGEST_SEARCH_SECURE: spec.secure ? '1' : '0',
    ES_EXTRA_SETTINGS: Object.entries(spec.settings ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
  };
  const signalAll = async (signal: NodeJS.Signals) => {
    const root = Number(readFileSync(join(stateDir, 'elasticsearch.pid'), 'utf8'));
    for (const pid of await processTree(root)) process.kill(pid, signal);
  };
  const started = Date.now();
  try {
    await run('bash', ['scripts/stack.sh', 'up'], { env, timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(
      `${spec.engine.product} ${spec.engine.version} could not start:\n${e.stderr ?? e.message}`,
    );
  }
  const caFile = join(stateDir, 'search-ca.pem');
  return {
    url: `${spec.secure ? 'https' : 'http'}://127.0.0.1:${port}`,
    ...(spec.secure && {
      caFile,
      password: readFileSync(join(stateDir, 'search-admin-password'), 'utf8'),
      ...(spec.engine.product === 'elasticsearch' && {
        apiKey: readFileSync(join(stateDir, 'search-api-key'), 'utf8'),
      }),
    }),
    startMs: Date.now() - started,
    stop: async () => {
      await run('bash', ['scripts/stack.sh', 'down', 'elasticsearch'], { env, timeout: 120_000 });
    },
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
  };
}
