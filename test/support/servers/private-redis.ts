import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePortFrom } from '../../../harness/ports.js';
import { waitFor } from '../../../harness/stack.js';

/**
 * A throw-away redis-server for one test file, so that tests can freeze (SIGSTOP), stop,
 * restart and flush a real Redis without touching the shared one.
 */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** SIGSTOP: the connection stays open, nothing answers (a hung server, a dropped network). */
  freeze(): void;
  /** SIGCONT. */
  thaw(): void;
  /** Stops the server (its data is gone: it keeps nothing on disk). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  flush(): Promise<void>;
  /** Stops it for good and removes its directory. */
  dispose(): Promise<void>;
  readonly running: boolean;
}

export async function startPrivateRedis(
  options: { port?: number; args?: string[] } = {},
): Promise<PrivateRedis> {
  const port = options.port ?? (await freePortFrom(6390));
  const dir = mkdtempSync(join(tmpdir(), 'rxingest-redis-'));
  let child: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}`;

  const start = async () => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...(options.args ?? []),
      ],
      { stdio: 'ignore' },
    );
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await waitFor(
        `redis-server on port ${port}`,
        async () => {
          if (probe.status !== 'ready') await probe.connect().catch(() => undefined);
          return (await probe.ping().catch(() => '')) === 'PONG';
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
    } finally {
      probe.disconnect();
    }
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null) return;
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await once(c, 'exit');
  };
  await start();
  return {
    port,
    url,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
    stop,
    start,
    flush: async () => {
      const r = new Redis(url, { maxRetriesPerRequest: 0 });
      try {
        await r.flushall();
      } finally {
        r.disconnect();
      }
    },
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    get running() {
      return child !== undefined && child.exitCode === null;
    },
  };
}
