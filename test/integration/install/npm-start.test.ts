import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { samples, sampleValue, sumOf } from '../../../harness/prometheus-text.js';
import { createTopics, kafkaClient, stackEnv, uniqueName, waitFor } from '../../../harness/stack.js';
import { logLines, scrape } from '../../../harness/worker/observation.js';
import {
  isolatedWorkerEnv,
  spawnWorker,
  type WorkerProcess,
  whileRunning,
} from '../../../harness/worker/process.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload } from '../../../src/generator/workload.js';
import { assertPortFree, listeningSockets } from '../../support/servers/listening-sockets.js';
import { TcpProxy } from '../../support/servers/tcp-proxy.js';

/**
 * The worker started the way the README starts it (contract, "Running it"): `npm start`,
 * whose prestart builds dist/ and whose script execs `node dist/cli/main.js worker`, with
 * HTTP_HOST and HTTP_PORT unset. It listens on their defaults, 0.0.0.0:9464 ("Operating
 * it"). SIGTERM sent to npm (what a terminal, systemd or a container runtime sends) must
 * reach the worker, which drains what it holds, commits and exits 0, and npm with it. Its
 * Elasticsearch is a proxy the test holds, so that records are in flight when the signal
 * lands.
 */
const DEFAULT_PORT = 9464;
const PARTITIONS = 4;
const kafka = kafkaClient();
const admin = kafka.admin();
const name = uniqueName('npmstart');
const topic = `${name}.in`;
const group = `${name}-group`;
let proxy: TcpProxy;
let npm: WorkerProcess;
/** The worker process npm started (node dist/cli/main.js worker). */
let workerPid: number;

const readyz = async () => {
  const res = await fetch(`http://127.0.0.1:${DEFAULT_PORT}/readyz`, { signal: AbortSignal.timeout(5_000) });
  return res.status;
};

/** Per partition: committed offset and end. */
async function offsets() {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId: group, topics: [topic] }),
  ]);
  const c = new Map(committed[0]!.partitions.map((p) => [p.partition, Number(p.offset)]));
  return ends.map((e) => ({ partition: e.partition, committed: c.get(e.partition), end: Number(e.high) }));
}

/** The processes whose parent is `pid`, with their command lines. */
function childrenOf(pid: number): { pid: number; argv: string[] }[] {
  const out: { pid: number; argv: string[] }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      out.push({ pid: Number(entry), argv });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

beforeAll(async () => {
  await assertPortFree(DEFAULT_PORT, 'the default HTTP address of `npm start`');
  proxy = await TcpProxy.to(stackEnv.esNode);
  await admin.connect();
  await createTopics([{ topic, numPartitions: PARTITIONS }]);
  npm = spawnWorker(
    {
      ...isolatedWorkerEnv(name), // its input is `topic`, its group `group`
      PROGRESS_TOPIC: `${name}.progress`,
      ES_NODE: proxy.url,
      COMMIT_INTERVAL_MS: '200',
    },
    name,
    { via: 'npm-start', unset: ['HTTP_HOST', 'HTTP_PORT', 'METRICS_PORT', 'MALLOC_ARENA_MAX'] },
  );
}, 60_000);

afterAll(async () => {
  proxy.release();
  if (npm.child.exitCode === null && npm.child.signalCode === null) {
    npm.child.kill('SIGTERM');
    await npm.exited;
  }
  await proxy.shut();
  await admin.deleteTopics({ topics: [topic, `${name}.dlq`, `${name}.triggers`, `${name}.progress`] });
  await admin.deleteGroups([group]).catch(() => undefined);
  await admin.disconnect();
});

describe('npm start', () => {
  it('builds and runs the worker as npm’s own child, listening on 0.0.0.0:9464 with HTTP_HOST and HTTP_PORT unset', async () => {
    // The build comes first (about 10 s here, more on a busy machine).
    await whileRunning(
      npm,
      'waiting for /readyz',
      waitFor('/readyz 200 on port 9464', async () => (await readyz()) === 200, { timeoutMs: 150_000 }),
    );
    // No shell in between (the script's exec): npm forwards SIGTERM to its own child only,
    // so that child must be the worker.
    const worker = childrenOf(npm.child.pid!).find(
      (c) => c.argv.slice(-2).join(' ') === 'dist/cli/main.js worker',
    );
    expect(worker, `npm's children: ${JSON.stringify(childrenOf(npm.child.pid!))}`).toBeDefined();
    expect(worker!.argv[0]).toMatch(/(^|\/)node$/);
    // With the young generation the start script gives it (docs/decisions.md, 12).
    expect(worker!.argv).toContain('--max-semi-space-size=4');
    // And glibc's malloc arenas held to 2, the caller having set none (docs/decisions.md, 13).
    const environ = readFileSync(`/proc/${worker!.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain('MALLOC_ARENA_MAX=2');
    workerPid = worker!.pid;
    expect(listeningSockets(workerPid)).toEqual([{ address: '0.0.0.0', port: DEFAULT_PORT }]);
  });

  it('SIGTERM to npm reaches the worker: it drains the records in flight, commits them all and exits 0', async () => {
    // Nothing reaches Elasticsearch from now on, so whatever the worker takes in stays in flight.
    proxy.hold();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const records = planWorkload({ seed: 51, count: 2_000, ratePerSec: 20_000, clients: 100 });
    const { total: sent } = await runProducer({ topic, records }, { producer });
    await producer.disconnect();
    const held = await whileRunning(
      npm,
      'waiting for the records to be taken in',
      waitFor('every record taken in', async () => {
        const m = await scrape(DEFAULT_PORT);
        return sampleValue(m, 'rxingest_records_in_total') === sent ? m : undefined;
      }),
    );
    const inFlight = sumOf(held, 'rxingest_in_flight');
    expect(inFlight, 'records in flight when the signal lands').toBeGreaterThan(0);
    expect(samples(held, 'rxingest_in_flight')).toHaveLength(PARTITIONS);
    const before = await offsets();
    expect(before.reduce((a, p) => a + Math.max(0, p.committed ?? 0), 0)).toBeLessThan(sent);

    npm.child.kill('SIGTERM');
    const received = await whileRunning(
      npm,
      'waiting for the worker to see the signal',
      waitFor('the worker to log the signal', () => logLines(npm).find((l) => l.msg === 'signal received')),
    );
    expect(received.signal).toBe('SIGTERM');
    // Draining, not done: what was in flight is still there until Elasticsearch answers.
    expect(sumOf(await scrape(DEFAULT_PORT), 'rxingest_in_flight')).toBeGreaterThan(0);
    proxy.release();

    expect(await npm.exited, 'npm’s exit code').toBe(0);
    // The final commit is visible the moment npm returns: no waiting.
    const after = await offsets();
    expect(after.map((p) => p.committed)).toEqual(after.map((p) => p.end));
    expect(after.reduce((a, p) => a + p.end, 0)).toBe(sent);
    const stopped = logLines(npm).find((l) => l.msg === 'stopped');
    expect(stopped?.recordsIn).toBe(sent);
    expect(existsSync(`/proc/${workerPid}`), 'the worker process is gone with npm').toBe(false);
  });
});
