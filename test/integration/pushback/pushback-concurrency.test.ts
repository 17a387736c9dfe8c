import { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { freePortFrom } from '../../../harness/ports.js';
import { sumOf } from '../../../harness/prometheus-text.js';
import { type ExtraEsNode, startRefusingEsNode } from '../../../harness/servers/extra-es-node.js';
import { stackEnv, waitFor } from '../../../harness/stack.js';
import { linesStarting, sampleGauge, scrape } from '../../../harness/worker/observation.js';

const MESSAGES = 10_000;
/** ES_CONCURRENCY_INITIAL's default. */
const INITIAL = 4;

let node: ExtraEsNode;
let p: Pipeline;

beforeAll(async () => {
  // A queue of one: the node refuses at fewer concurrent writes than the limit's default
  // start, so the shipped limiter must come down from where it begins.
  node = await startRefusingEsNode(1);
  p = await Pipeline.create('pb-aimd', {
    servers: { ...stackEnv, esNode: node.url },
    asShipped: true,
  });
});

afterAll(async () => {
  await p?.cleanup();
  await node?.stop();
});

/** Write operations the node's thread pool refused (each a 429 item). */
async function rejections(): Promise<number> {
  const es = new Client({ node: node.url });
  try {
    const stats = await es.nodes.stats({ metric: 'thread_pool' });
    return Object.values(stats.nodes).reduce((a, n) => a + (n.thread_pool?.write?.rejected ?? 0), 0);
  } finally {
    await es.close();
  }
}

describe('adaptive concurrency in a running worker', () => {
  it('at the shipped ES_CONCURRENCY_* settings, lowers the limit on item-level 429s inside 200 answers, never opens the breaker, and loses nothing', async () => {
    const port = await freePortFrom(9510);
    // Every ES_CONCURRENCY_* setting at its default (4 at start, 1…32, ×0.9, 2.5σ).
    const w = p.spawn('w', p.controlEnv(port));
    await waitFor('the worker to serve /metrics', () => scrape(port), { timeoutMs: 90_000 });
    const sampling = sampleGauge(port, 'rxingest_es_concurrency_limit', 250);
    const limits = sampling.values;
    const started = Date.now();
    try {
      await p.produce(traffic(95, MESSAGES));
      await p.waitForEnd(240_000);
    } finally {
      sampling.stop();
    }
    const tookMs = Date.now() - started;
    const refused = await rejections();
    const last = await scrape(port);
    const itemRetries = sumOf(last, 'rxingest_retries_total', {
      target: 'elasticsearch',
      reason: 'item-429',
    });
    const requestRetries = sumOf(last, 'rxingest_retries_total', {
      target: 'elasticsearch',
      reason: 'status-429',
    });
    const expected = p.expected();
    const d = await p.assertContract(expected);
    const secondHalf = limits.slice(Math.floor(limits.length / 2));
    // A cut shows as a sample below the one before it. The limit may first grow past where it
    // started (a CI run went 16 → 18 before the refusals, then was cut to 16), so "below the
    // start" is not the sign of a cut.
    const cuts = limits.filter((v, i) => i > 0 && v < limits[i - 1]!).length;
    const report = {
      messages: MESSAGES,
      tookMs,
      rejections: refused,
      itemRetries,
      requestRetries,
      limitStart: INITIAL,
      limitMin: Math.min(...limits),
      limitMax: Math.max(...limits),
      limitEnd: limits.at(-1),
      cuts,
      secondHalfBand: [Math.min(...secondHalf), Math.max(...secondHalf)],
      samples: limits.length,
      series: limits,
      lost: d.missingEvents + d.wrongProfiles + d.missingTriggers + d.missingDeadLetters,
      duplicated: d.extraEvents + d.duplicateTriggers + d.duplicateDeadLetters,
    };
    process.stdout.write(`[pushback-concurrency] ${JSON.stringify(report)}\n`);
    expect(refused, 'write operations Elasticsearch refused with 429').toBeGreaterThan(0);
    expect(itemRetries, 'items refused inside 200 answers, retried').toBeGreaterThan(0);
    expect(cuts, 'the limit was cut while Elasticsearch refused items').toBeGreaterThan(0);
    expect(Math.min(...limits), 'the limit came down below its default start').toBeLessThan(INITIAL);
    expect(linesStarting(w, 'Elasticsearch circuit breaker open'), 'load refusals are not failures').toEqual(
      [],
    );
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 300_000);
});
