/**
 * CPU pinning for the pinned benchmark: Elasticsearch's JVM gets CPU 0 to itself and everything
 * else (this process, the workers it spawns, Kafka, Redis) shares CPU 1, so that "the speed at
 * which Elasticsearch can write" is one core's worth, whoever loads it. `taskset -a` moves every
 * thread; threads started later inherit their creator's mask. `restore` gives every process the
 * mask it had before, so the stack is never left pinned.
 */
import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Pinning {
  /** What runs where, for the report. */
  readonly layout: string;
  restore(): Promise<void>;
}

async function maskOf(pid: number): Promise<string> {
  const { stdout } = await run('taskset', ['-p', String(pid)]);
  const m = /mask:\s*([0-9a-f]+)/i.exec(stdout);
  if (!m) throw new Error(`taskset -p ${pid}: unexpected answer ${JSON.stringify(stdout.trim())}`);
  return m[1]!;
}

const setMask = (pid: number, mask: string) => run('taskset', ['-a', '-p', mask, String(pid)]);
const setCpus = (pid: number, cpus: string) => run('taskset', ['-a', '-p', '-c', cpus, String(pid)]);

/** Why pinning cannot run here, or undefined when it can. */
export async function pinningUnavailable(): Promise<string | undefined> {
  if (availableParallelism() < 2) return 'fewer than 2 cores';
  try {
    await run('taskset', ['-p', String(process.pid)]);
    return undefined;
  } catch (err) {
    return `taskset is not usable (${(err as Error).message.split('\n')[0]})`;
  }
}

/** Elasticsearch on CPU 0; this process and the other servers on CPU 1. */
export async function pinElasticsearchApart(pids: {
  readonly elasticsearch: number;
  readonly others: Readonly<Record<string, number | undefined>>;
}): Promise<Pinning> {
  const saved: [number, string][] = [];
  const restore = async () => {
    for (const [pid, mask] of saved.reverse()) await setMask(pid, mask).catch(() => undefined);
  };
  try {
    const pin = async (pid: number, cpus: string) => {
      saved.push([pid, await maskOf(pid)]);
      await setCpus(pid, cpus);
    };
    await pin(pids.elasticsearch, '0');
    const names: string[] = [];
    for (const [name, pid] of Object.entries(pids.others)) {
      if (pid === undefined) continue;
      await pin(pid, '1');
      names.push(name);
    }
    await pin(process.pid, '1');
    return {
      layout: `CPU 0: Elasticsearch alone; CPU 1: the load (raw loader or worker), the bench process, ${names.join(', ') || 'nothing else'}`,
      restore,
    };
  } catch (err) {
    await restore();
    throw err;
  }
}
