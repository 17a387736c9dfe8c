import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SearchEngine } from '../../src/clients/search-engine.js';

const run = promisify(execFile);

/** A search engine the compatibility run starts on a port of its own, next to the shared stack. */
export interface EngineSpec {
  readonly engine: SearchEngine;
  readonly port: number;
}

export interface EngineServer {
  readonly url: string;
  /** From `up` to the cluster answering yellow (the first run includes the download). */
  readonly startMs: number;
  stop(): Promise<void>;
}

/**
 * `scripts/stack.sh up` for one engine on `spec.port`, with its own state folder and a small
 * heap; the Kafka and Redis of the running stack are used as they are. `stop` takes down only
 * that engine (`down elasticsearch` in its state folder).
 */
export async function startEngine(spec: EngineSpec): Promise<EngineServer> {
  const env = {
    ...process.env,
    RXINGEST_STACK_MODE: 'native',
    RXINGEST_STACK_DIR: join(tmpdir(), `rxingest-engine-${spec.port}`),
    RXINGEST_SEARCH_ENGINE: spec.engine.product,
    SEARCH_VERSION: spec.engine.version,
    ES_PORT: String(spec.port),
    ES_HEAP: '512m',
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
  return {
    url: `http://127.0.0.1:${spec.port}`,
    startMs: Date.now() - started,
    stop: async () => {
      await run('bash', ['scripts/stack.sh', 'down', 'elasticsearch'], { env, timeout: 120_000 });
    },
  };
}
