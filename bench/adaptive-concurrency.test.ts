/**
 * The adaptive-concurrency benchmark (`npm run bench:concurrency`, about 2 minutes; not
 * part of `npm test`: it measures speed): against one real Elasticsearch node that refuses
 * (one write thread, a write queue of two: item-level 429s inside HTTP 200 answers), the
 * same 10,000 messages are ingested with fixed limits 1, 2, 4, 8 and 16 and with the
 * adaptive limit, each by a fresh worker; it prints docs/s side by side and the band the
 * adaptive limit settles in. Every run must still end in exactly the contract's state.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traffic } from '../test/faults/scenarios/common.js';
import { type ExtraEsNode, freePort, startRefusingEsNode } from '../test/support/extra-es-node.js';
import { Pipeline } from '../test/support/pipeline.js';
import { stackEnv, waitFor } from '../test/support/stack.js';
import { linesStarting, sampleGauge } from '../test/support/worker-observation.js';

const MESSAGES = 10_000;
const PARTITIONS = 8;

let node: ExtraEsNode;

beforeAll(async () => {
  // The same refusing node as pushback-concurrency: one write thread, a queue of two.
  node = await startRefusingEsNode();
});

afterAll(async () => {
  await node?.stop();
});

interface Run {
  readonly setting: string;
  readonly docsPerSec: number;
  readonly limits: readonly number[];
}

/** One fresh deployment on the node: a worker with these settings ingests MESSAGES; how fast. */
async function ingest(setting: string, env: Record<string, string>, seed: number): Promise<Run> {
  const p = await Pipeline.create('pb-sweep', {
    partitions: PARTITIONS,
    servers: { ...stackEnv, esNode: node.url },
    env: { BATCH_MAX: '200' },
  });
  try {
    const port = await freePort(9520);
    const w = p.spawn(setting, {
      ...env,
      ...p.controlEnv(port),
    });
    await waitFor(
      'every partition assigned',
      () => linesStarting(w, 'partition assigned').length >= PARTITIONS,
      { timeoutMs: 90_000, intervalMs: 100 },
    );
    const sampling = sampleGauge(port, 'rxingest_es_concurrency_limit', 250);
    const limits = sampling.values;
    const started = Date.now();
    try {
      await p.produce(traffic(seed, MESSAGES));
      await p.waitForEnd(240_000);
    } finally {
      sampling.stop();
    }
    const seconds = (Date.now() - started) / 1000;
    const d = await p.assertContract(p.expected());
    expect(d.missingEvents + d.wrongProfiles + d.missingTriggers + d.extraEvents + d.duplicateTriggers).toBe(
      0,
    );
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    return { setting, docsPerSec: Math.round(MESSAGES / seconds), limits };
  } finally {
    await p.cleanup();
  }
}

describe('adaptive concurrency against fixed limits, same node, same run', () => {
  it('ingests a refusing node about as fast as the best fixed limit of a sweep', async () => {
    const runs: Run[] = [];
    for (const k of [1, 2, 4, 8, 16]) {
      const fixed = String(k);
      runs.push(
        await ingest(
          `fixed-${k}`,
          { ES_CONCURRENCY_INITIAL: fixed, ES_CONCURRENCY_MIN: fixed, ES_CONCURRENCY_MAX: fixed },
          100 + k,
        ),
      );
    }
    const adaptive = await ingest('adaptive', {}, 200);
    const best = runs.reduce((a, r) => (r.docsPerSec > a.docsPerSec ? r : a));
    const tail = adaptive.limits.slice(Math.floor(adaptive.limits.length / 2));
    // For `npm run bench -- --only concurrency`, which turns it into a table and plots.
    const dir = join(process.cwd(), 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'adaptive-concurrency.json'),
      JSON.stringify({ messages: MESSAGES, sampleMs: 250, runs: [...runs, adaptive] }),
    );
    process.stdout.write(
      `[pushback-concurrency-sweep] ${JSON.stringify({
        messages: MESSAGES,
        fixed: Object.fromEntries(runs.map((r) => [r.setting, r.docsPerSec])),
        adaptive: adaptive.docsPerSec,
        best: best.setting,
        ratioToBest: Math.round((adaptive.docsPerSec / best.docsPerSec) * 100) / 100,
        adaptiveLimitSecondHalf: tail.length > 0 ? [Math.min(...tail), Math.max(...tail)] : [],
      })}\n`,
    );
    // Reported, not asserted: a speed comparison on one noisy 2-core machine is a figure
    // for the README, not a pass/fail (fixed runs alone vary by 2× from run to run here).
    expect(runs.every((r) => r.docsPerSec > 0) && adaptive.docsPerSec > 0).toBe(true);
  }, 900_000);
});
