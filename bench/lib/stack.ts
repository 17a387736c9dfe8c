/** The local stack as the end-to-end benchmarks use it: names, topics, indices, clean-up, process CPU. */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import type { Client } from '@elastic/elasticsearch';
import type { Kafka, Message } from 'kafkajs';
import {
  createTopicsWithLeaders,
  esClient,
  kafkaClient,
  redisClient,
  stackEngine,
  stackEnv,
} from '../../harness/stack.js';
import type { WorkloadRecord } from '../../src/generator/workload.js';

export { esClient, kafkaClient, redisClient, stackEngine, stackEnv };

const run = promisify(execFile);

const portOpen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

const portOf = (url: string, fallback: number) => {
  const m = /:(\d+)(\/|$)/.exec(url.split(',')[0]!.replace(/^[a-z]+:\/\//, 'x:'));
  return m ? Number(m[1]) : fallback;
};

/** Brings the stack up (`npm run stack:up`) if one of its servers does not answer; never takes it down. */
export async function ensureStack(): Promise<void> {
  const ports = [
    portOf(stackEnv.kafkaBrokers, 9092),
    portOf(stackEnv.esNode, 9200),
    portOf(stackEnv.redisUrl, 6379),
  ];
  const up = await Promise.all(ports.map(portOpen));
  if (up.every(Boolean)) return;
  process.stdout.write('  the local stack is not (fully) up: npm run stack:up …\n');
  await run('npm', ['run', '--silent', 'stack:up'], { maxBuffer: 64 * 1024 * 1024, timeout: 15 * 60_000 });
}

/** The pid listening on a local TCP port (ss), for CPU accounting of the stack's servers. */
export async function pidOnPort(port: number): Promise<number | undefined> {
  try {
    const { stdout } = await run('ss', ['-Hltnp', `sport = :${port}`]);
    const m = /pid=(\d+)/.exec(stdout);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export async function stackPids(): Promise<Record<string, number | undefined>> {
  return {
    elasticsearch: await pidOnPort(portOf(stackEnv.esNode, 9200)),
    kafka: await pidOnPort(portOf(stackEnv.kafkaBrokers, 9092)),
    redis: await pidOnPort(portOf(stackEnv.redisUrl, 6379)),
  };
}

const CLK_TCK = 100;

/** CPU seconds (user + system) a process has used so far, or undefined if it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state is field 3, utime 14 and stime 15 (1-based over the whole line).
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** CPU seconds each core of the machine has been busy so far (all but idle and iowait), by core. */
export function coreBusySeconds(): number[] {
  const busy: number[] = [];
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)$/.exec(line);
    if (!m) continue;
    const v = m[2]!.trim().split(/\s+/).map(Number);
    busy[Number(m[1])] = (v.reduce((a, b) => a + b, 0) - v[3]! - v[4]!) / CLK_TCK;
  }
  return busy;
}

/** VmRSS and VmHWM (peak) of a process, in MB. */
export function memoryMb(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Everything one benchmark run creates, so that it can all be removed at the end. */
export class RunResources {
  readonly topics = new Set<string>();
  readonly redisPrefixes = new Set<string>();
  readonly groups = new Set<string>();

  constructor(
    readonly runId: string,
    private readonly kafka: Kafka = kafkaClient('rxingest-bench'),
    private readonly es: Client = esClient(),
  ) {}

  name(suffix: string): string {
    return `${this.runId}-${suffix}`.toLowerCase();
  }

  async createTopic(topic: string, numPartitions = 8): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      this.topics.add(topic);
      // On a cluster, kafkajs's own wait can ask a broker that has not heard of the topic yet.
      await createTopicsWithLeaders(admin, [{ topic, numPartitions }]);
    } finally {
      await admin.disconnect();
    }
  }

  async createIndex(index: string, mappings: object): Promise<void> {
    await this.es.indices.create({ index, mappings: structuredClone(mappings) as never });
  }

  /** Removes this run's indices, topics, consumer groups and Redis keys. Best effort, never throws. */
  async cleanUp(): Promise<string[]> {
    const problems: string[] = [];
    try {
      const indices = (await this.es.cat.indices({ index: `${this.runId}*`, format: 'json' })) as {
        index?: string;
      }[];
      for (const { index } of indices) {
        if (index)
          await this.es.indices.delete({ index }).catch((e) => problems.push(`index ${index}: ${e}`));
      }
    } catch (e) {
      problems.push(`listing indices: ${e}`);
    }
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const mine = [...existing].filter((t) => t.startsWith(this.runId));
      if (mine.length > 0) await admin.deleteTopics({ topics: mine, timeout: 30_000 });
      const groups = (await admin.listGroups()).groups
        .map((g) => g.groupId)
        .filter((g) => g.startsWith(this.runId));
      if (groups.length > 0) {
        // A group whose last member left a moment ago may still be settling: try again once.
        await admin.deleteGroups(groups).catch(async () => {
          await sleep(3_000);
          const left = (await admin.listGroups()).groups
            .map((g) => g.groupId)
            .filter((g) => groups.includes(g));
          if (left.length > 0) {
            await admin.deleteGroups(left).catch((e) => {
              const detail = (e as { groups?: { groupId: string; error?: { type?: string } }[] }).groups
                ?.filter((g) => g.error)
                .map((g) => `${g.groupId}: ${g.error?.type}`)
                .join(', ');
              problems.push(`consumer groups: ${detail || e}`);
            });
          }
        });
      }
    } catch (e) {
      problems.push(`topics: ${e}`);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    const redis = redisClient();
    try {
      for (const prefix of this.redisPrefixes) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000);
          cursor = next;
          if (keys.length > 0) await redis.unlink(...keys);
        } while (cursor !== '0');
      }
    } catch (e) {
      problems.push(`redis: ${e}`);
    } finally {
      redis.disconnect();
    }
    await this.es.close().catch(() => undefined);
    return problems;
  }
}

/** Sends records as fast as the broker takes them: chunks of `chunk`, `inFlight` sends at a time. */
export async function produceAll(
  kafka: Kafka,
  topic: string,
  records: Iterable<WorkloadRecord>,
  { chunk = 1000, inFlight = 4 } = {},
): Promise<{ count: number; ms: number }> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const t0 = performance.now();
  let count = 0;
  try {
    const pending = new Set<Promise<unknown>>();
    let batch: Message[] = [];
    const send = async (messages: Message[]) => {
      const p = producer.send({ topic, acks: -1, messages });
      pending.add(p);
      p.finally(() => pending.delete(p)).catch(() => undefined);
      if (pending.size >= inFlight) await Promise.race(pending);
    };
    for (const r of records) {
      batch.push({ key: r.key, value: r.value });
      count++;
      if (batch.length >= chunk) {
        await send(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await send(batch);
    await Promise.all(pending);
  } finally {
    await producer.disconnect();
  }
  return { count, ms: performance.now() - t0 };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
