import { expect } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import type { WorkerProcess } from '../../../harness/worker/process.js';
import { prng } from '../../support/data/random.js';
import { finish, type ScenarioReport, type Size, stopGracefully, whenCommitted } from './common.js';

/** SIGKILL the worker at `size.kills` random points of the run, starting it again each time. */
export async function killedRepeatedly(size: Size, seed = 71): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-kills');
  try {
    const random = prng(seed);
    const workers: WorkerProcess[] = [p.spawn('w0')];
    const producing = p.produce(traffic(seed, size.messages));
    for (let k = 1; k <= size.kills; k++) {
      // A random point: somewhere between this kill's share of the run and the next.
      const target = (size.messages * (k - 1 + random())) / (size.kills + 1);
      await whenCommitted(p, target, size);
      const w = workers.at(-1)!;
      w.child.kill('SIGKILL');
      expect(await w.exited).toBe('SIGKILL');
      workers.push(p.spawn(`w${k}`));
    }
    await producing;
    const report = await finish(p, 'worker SIGKILLed repeatedly', workers, size, { kills: size.kills });
    await stopGracefully(workers.at(-1)!);
    return report;
  } finally {
    await p.cleanup();
  }
}

/**
 * Three workers in one group, with kills and additions while the run goes on; a client's
 * profile version, sampled all along, never goes backwards.
 */
export async function groupChurn(size: Size, seed = 72): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-churn', { partitions: 12 });
  let sampling = true;
  const regressions: string[] = [];
  const seen = new Map<string, number>();
  const sampler = (async () => {
    while (sampling) {
      const res = await p.es
        .search<{ version: number }>({
          index: p.names.profiles,
          size: 1000,
          _source: ['version'],
          sort: ['_doc'],
        })
        .catch(() => undefined);
      for (const h of res?.hits.hits ?? []) {
        const v = h._source?.version ?? -1;
        const before = seen.get(h._id!) ?? -1;
        if (v < before) regressions.push(`${h._id}: ${before} → ${v}`);
        seen.set(h._id!, Math.max(before, v));
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  try {
    const workers: WorkerProcess[] = [p.spawn('a'), p.spawn('b'), p.spawn('c')];
    const producing = p.produce(traffic(seed, size.messages));
    const steps: [number, () => Promise<void>][] = [
      [0.15, async () => void workers[1]!.child.kill('SIGKILL')],
      [0.3, async () => void workers.push(p.spawn('d'))],
      [0.45, () => stopGracefully(workers[0]!)],
      [0.6, async () => void workers.push(p.spawn('e'))],
      [0.75, async () => void workers[2]!.child.kill('SIGKILL')],
      [0.85, async () => void workers.push(p.spawn('f'))],
    ];
    for (const [share, act] of steps) {
      await whenCommitted(p, size.messages * share, size);
      await act();
    }
    await producing;
    const report = await finish(p, 'three workers with kills and additions', workers, size, { kills: 2 });
    sampling = false;
    await sampler;
    expect(regressions, 'profile versions that went backwards').toEqual([]);
    for (const w of workers.slice(3)) await stopGracefully(w);
    return report;
  } finally {
    sampling = false;
    await sampler;
    await p.cleanup();
  }
}
