import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traffic } from '../faults/scenarios/common.js';
import { type ExtraEsNode, freePort, startExtraEsNode } from '../support/extra-es-node.js';
import { Pipeline } from '../support/pipeline.js';
import { sampleValue } from '../support/prometheus-text.js';
import { stackEnv, waitFor } from '../support/stack.js';
import { linesStarting, scrape } from '../support/worker-observation.js';

const MESSAGES = 10_000;
const PARTITIONS = 8;

let node: ExtraEsNode;

beforeAll(async () => {
  // The same refusing node as pushback-concurrency: one write thread, a queue of two.
  node = await startExtraEsNode({
    settings: { 'thread_pool.write.size': 1, 'thread_pool.write.queue_size': 2 },
  });
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
      HTTP_PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      CONTROL_TOPIC: `${p.names.group}.control`,
      CONTROL_KEY_PREFIX: `${p.env.REDIS_KEY_PREFIX}control:`,
    });
    await waitFor(
      'every partition assigned',
      () => linesStarting(w, 'partition assigned').length >= PARTITIONS,
      { timeoutMs: 90_000, intervalMs: 100 },
    );
    const limits: number[] = [];
    const sampling = setInterval(() => {
      scrape(port)
        .then((m) => {
          const v = sampleValue(m, 'rxingest_es_concurrency_limit');
          if (v !== undefined) limits.push(v);
        })
        .catch(() => undefined);
    }, 250);
    const started = Date.now();
    try {
      await p.produce(traffic(seed, MESSAGES));
      await p.waitForEnd(240_000);
    } finally {
      clearInterval(sampling);
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
    await p.admin.deleteTopics({ topics: [`${p.names.group}.control`] }).catch(() => undefined);
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
    // Reported, loosely bounded: one noisy 2-core machine runs the node, Kafka and the worker.
    expect(adaptive.docsPerSec).toBeGreaterThanOrEqual(best.docsPerSec * 0.7);
  }, 900_000);
});
