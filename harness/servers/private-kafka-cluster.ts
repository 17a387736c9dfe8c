import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { freePortFrom } from '../ports.js';
import { waitFor } from '../stack.js';

/**
 * A throw-away 3-node KRaft cluster for one test file or benchmark, from the same jars and
 * node template as `KAFKA_CLUSTER_SIZE=3 npm run stack:up` (scripts/stack/kafka-cluster.sh):
 * every node broker + controller, topics replicated 3 times with min ISR 2 by default.
 * Ports are free ones from 9292 up, so it never meets the local stack (9092-9097) or a
 * private single broker (9192 up). Nodes can be killed and started again one by one.
 */
export interface ClusterNode {
  readonly id: number;
  readonly port: number;
  /** The JVM's pid while it runs. */
  pid(): number | undefined;
  running(): boolean;
  /** SIGKILL, data kept. */
  kill(): Promise<void>;
  start(): Promise<void>;
}

export interface PrivateKafkaCluster {
  /** Every node's broker address, comma-separated (a client bootstraps from any that answers). */
  readonly brokers: string;
  readonly nodes: readonly ClusterNode[];
  node(id: number): ClusterNode;
  dispose(): Promise<void>;
}

const version = process.env.KAFKA_VERSION ?? '3.9.1';
const cache =
  process.env.RXINGEST_CACHE ??
  (process.getuid?.() === 0
    ? '/var/cache/rxingest'
    : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rxingest'));

const SIZE = 3;
const started = (log: string) =>
  existsSync(log) ? readFileSync(log, 'utf8').split('Kafka Server started').length - 1 : 0;

export async function startPrivateKafkaCluster({
  heap = '512m',
}: {
  heap?: string;
} = {}): Promise<PrivateKafkaCluster> {
  const libs = join(cache, `kafka-${version}`, 'libs');
  if (!existsSync(join(libs, '.complete')))
    throw new Error(`private Kafka cluster: ${libs} is missing; run \`npm run stack:up\` once`);
  const ports: { broker: number; controller: number }[] = [];
  let next = 9292;
  for (let i = 0; i < SIZE; i++) {
    const broker = await freePortFrom(next);
    const controller = await freePortFrom(broker + 1);
    ports.push({ broker, controller });
    next = controller + 1;
  }
  const dir = mkdtempSync(join(tmpdir(), 'rxingest-kafka-cluster-'));
  const template = readFileSync(
    join(process.cwd(), 'scripts', 'stack', 'kafka-cluster.properties.tmpl'),
    'utf8',
  );
  const log4j = join(dir, 'log4j.properties');
  writeFileSync(log4j, readFileSync(join(process.cwd(), 'scripts', 'stack', 'kafka-log4j.properties')));
  const cp = `${libs}/*`;
  const jopts = [
    '-Xms256m',
    `-Xmx${heap}`,
    '-XX:+UseG1GC',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${log4j}`,
  ];
  const voters = ports.map((p, i) => `${i + 1}@127.0.0.1:${p.controller}`).join(',');
  const clusterId = execFileSync('java', ['-cp', cp, 'kafka.tools.StorageTool', 'random-uuid'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();

  const children = new Map<number, ChildProcess>();
  const onExit = () => {
    for (const c of children.values()) c.kill('SIGKILL');
  };
  process.once('exit', onExit);

  const made = ports.map((p, i) => {
    const id = i + 1;
    const nodeDir = join(dir, `node-${id}`);
    mkdirSync(nodeDir, { recursive: true });
    const cfg = join(nodeDir, 'server.properties');
    const log = join(nodeDir, 'kafka.log');
    writeFileSync(
      cfg,
      template
        .replaceAll('@NODE_ID@', String(id))
        .replaceAll('@VOTERS@', voters)
        .replaceAll('@KAFKA_PORT@', String(p.broker))
        .replaceAll('@CONTROLLER_PORT@', String(p.controller))
        .replaceAll('@DATA@', join(nodeDir, 'data')),
    );
    execFileSync(
      'java',
      [...jopts, '-cp', cp, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', cfg],
      {
        stdio: 'ignore',
      },
    );
    const running = () => {
      const c = children.get(id);
      return c !== undefined && c.exitCode === null && c.signalCode === null;
    };
    /** Spawns the JVM; `ready` waits until it logged one more start than before. */
    const spawnNode = () => {
      const before = started(log);
      const out = openSync(log, 'a');
      try {
        children.set(
          id,
          spawn('java', [...jopts, '-cp', cp, 'kafka.Kafka', cfg], { stdio: ['ignore', out, out] }),
        );
      } finally {
        closeSync(out);
      }
      const c = children.get(id)!;
      return async () => {
        const outcome = await waitFor(
          `private Kafka node ${id} on ${p.broker}`,
          () => (c.exitCode !== null ? 'exited' : started(log) > before && 'started'),
          { timeoutMs: 120_000, intervalMs: 200 },
        );
        if (outcome === 'exited')
          throw new Error(`private Kafka node ${id} exited with ${c.exitCode}; see ${log}`);
      };
    };
    const node: ClusterNode = {
      id,
      port: p.broker,
      pid: () => (running() ? children.get(id)?.pid : undefined),
      running,
      kill: async () => {
        const c = children.get(id);
        if (c === undefined || !running()) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGKILL');
        await exited;
      },
      start: async () => {
        if (running()) return;
        await spawnNode()();
      },
    };
    return { node, spawnNode };
  });
  const nodes = made.map((m) => m.node);

  // All nodes start together: none finishes starting before a quorum of controllers is up.
  try {
    const readies = made.map((m) => m.spawnNode());
    await Promise.all(readies.map((ready) => ready()));
  } catch (err) {
    onExit();
    throw err;
  }
  return {
    brokers: ports.map((p) => `127.0.0.1:${p.broker}`).join(','),
    nodes,
    node: (id) => {
      const n = nodes.find((x) => x.id === id);
      if (!n) throw new Error(`private Kafka cluster: no node ${id}`);
      return n;
    },
    dispose: async () => {
      process.removeListener('exit', onExit);
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** How many partitions of `topic` each node leads, and the node that leads the most. */
export async function busiestLeader(
  admin: Admin,
  topic: string,
): Promise<{ nodeId: number; leads: number; byNode: Record<number, number> }> {
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  const byNode: Record<number, number> = {};
  for (const p of meta.topics[0]!.partitions) byNode[p.leader] = (byNode[p.leader] ?? 0) + 1;
  const [nodeId, leads] = Object.entries(byNode)
    .map(([k, v]) => [Number(k), v] as const)
    .reduce((a, b) => (b[1] > a[1] ? b : a));
  return { nodeId, leads, byNode };
}
