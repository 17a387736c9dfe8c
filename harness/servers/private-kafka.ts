import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePortFrom } from '../ports.js';
import { waitFor } from '../stack.js';

/**
 * A throw-away single-node KRaft Kafka for one test file, from the same jars and template
 * as the local stack (scripts/stack.sh): it can be stopped and started again (data kept)
 * without disturbing the shared broker.
 */
export interface PrivateKafka {
  readonly brokers: string;
  /** SIGTERM (a clean shutdown), data kept. */
  stop(): Promise<void>;
  /** SIGKILL, data kept. */
  kill(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

const version = process.env.KAFKA_VERSION ?? '3.9.1';
const cache =
  process.env.RXINGEST_CACHE ??
  (process.getuid?.() === 0
    ? '/var/cache/rxingest'
    : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rxingest'));

/** The Kafka jars the local stack fetched (broker, Java client and its codecs). */
export function kafkaLibs(who = 'private Kafka'): string {
  const libs = join(cache, `kafka-${version}`, 'libs');
  if (!existsSync(join(libs, '.complete')))
    throw new Error(`${who}: ${libs} is missing; run \`npm run stack:up\` once`);
  return libs;
}

export async function startPrivateKafka(): Promise<PrivateKafka> {
  const libs = kafkaLibs();
  const port = await freePortFrom(9192);
  const controller = await freePortFrom(port + 1);
  const dir = mkdtempSync(join(tmpdir(), 'rxingest-kafka-'));
  const cfg = join(dir, 'server.properties');
  const log = join(dir, 'kafka.log');
  const template = readFileSync(
    join(process.cwd(), 'scripts', 'stack', 'kafka-server.properties.tmpl'),
    'utf8',
  );
  writeFileSync(
    cfg,
    template
      .replaceAll('@KAFKA_PORT@', String(port))
      .replaceAll('@CONTROLLER_PORT@', String(controller))
      .replaceAll('@DATA@', join(dir, 'data')),
  );
  const log4j = join(dir, 'log4j.properties');
  writeFileSync(log4j, readFileSync(join(process.cwd(), 'scripts', 'stack', 'kafka-log4j.properties')));
  const cp = `${libs}/*`;
  const jopts = [
    '-Xms256m',
    '-Xmx512m',
    '-XX:+UseG1GC',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${log4j}`,
  ];
  const id = execFileSync('java', ['-cp', cp, 'kafka.tools.StorageTool', 'random-uuid'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
  execFileSync('java', [...jopts, '-cp', cp, 'kafka.tools.StorageTool', 'format', '-t', id, '-c', cfg], {
    stdio: 'ignore',
  });

  let child: ChildProcess | undefined;
  const start = async () => {
    const before = existsSync(log) ? readFileSync(log, 'utf8').split('Kafka Server started').length : 1;
    const out = openSync(log, 'a');
    try {
      child = spawn('java', [...jopts, '-cp', cp, 'kafka.Kafka', cfg], { stdio: ['ignore', out, out] });
    } finally {
      closeSync(out);
    }
    const c = child;
    const outcome = await waitFor(
      `private Kafka on ${port}`,
      () => {
        if (c.exitCode !== null) return 'exited';
        return readFileSync(log, 'utf8').split('Kafka Server started').length > before && 'started';
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    if (outcome === 'exited') throw new Error(`private Kafka exited with ${c.exitCode}; see ${log}`);
  };
  /**
   * A clean stop is SIGTERM; a broker whose controlled shutdown does not end within
   * 30 s is killed (a hung shutdown must not hang the test; the scenario then also
   * covers an unclean stop, which it tolerates).
   */
  const signal = async (sig: NodeJS.Signals) => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(sig);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), 30_000);
    });
    if ((await Promise.race([exited, late])) === 'late') {
      process.stderr.write(`private Kafka on ${port} did not stop within 30 s of ${sig}; killing it\n`);
      c.kill('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
  };
  const onExit = () => child?.kill('SIGKILL');
  process.once('exit', onExit);
  await start();
  return {
    brokers: `127.0.0.1:${port}`,
    stop: () => signal('SIGTERM'),
    kill: () => signal('SIGKILL'),
    start,
    dispose: async () => {
      process.removeListener('exit', onExit);
      await signal('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
