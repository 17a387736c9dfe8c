import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { freePortFrom, freePort as unusedPort } from '../../../harness/ports.js';
import { sumOf } from '../../../harness/prometheus-text.js';
import { readCommitted, waitFor } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { linesStarting, scrape } from '../../../harness/worker/observation.js';
import { type WorkerProcess, whileRunning } from '../../../harness/worker/process.js';
import type { WorkloadRecord } from '../../../src/generator/workload.js';

/**
 * EVENTS_INDEX with a date pattern through a real worker (contract, "Output: Elasticsearch"):
 * the index template is installed at start, every event lands in the index of its own `ts`
 * in UTC (never of its arrival: the times here are in months before the run), and a copy
 * re-sent later meets its original there. The worker runs without Redis (an address nobody
 * listens on) and with a 100 ms DEDUP_WINDOW_MS, so the copies get past both fast paths and
 * must be told apart by Elasticsearch itself: a 409 in the same index, the original's origin,
 * no second document and no second trigger. `rxingest reconcile --json` then finds nothing
 * missing or different.
 */

const DEDUP_WINDOW_MS = 100;

/** Each event's time, and the index names the contract implies for it, written out by hand. */
const EVENTS = [
  { ts: '2026-10-15T08:00:00.000Z', name: 'purchase', month: '2026.10', day: '2026.10.15' },
  // Midnight in Paris on 1 November is still 31 October in UTC.
  { ts: '2026-11-01T00:30:00.000+01:00', name: 'signup', month: '2026.10', day: '2026.10.31' },
  { ts: '2026-11-01T00:00:00.000Z', name: 'signup', month: '2026.11', day: '2026.11.01' },
  { ts: '2026-11-30T23:59:59.999Z', name: 'purchase', month: '2026.11', day: '2026.11.30' },
] as const;

describe.each([
  ['{yyyy.MM}', 'month'],
  ['{yyyy.MM.dd}', 'day'],
] as const)('a real worker with EVENTS_INDEX=<name>-ev-%s', (datePattern, unit) => {
  let p: Pipeline;
  let base: string;
  let env: Record<string, string>;
  let worker: WorkerProcess;
  let port: number;

  beforeAll(async () => {
    p = await Pipeline.create('date-index', { partitions: 2 });
    base = `${p.names.topic.slice(0, -'.in'.length)}-ev-`;
    env = {
      ...p.env,
      EVENTS_INDEX: `${base}${datePattern}`,
      REDIS_URL: `redis://127.0.0.1:${await unusedPort()}`,
      DEDUP_WINDOW_MS: String(DEDUP_WINDOW_MS),
    };
  });

  afterAll(async () => {
    const templates = await p.es.indices.getIndexTemplate().catch(() => undefined);
    for (const t of templates?.index_templates ?? [])
      if (t.index_template.index_patterns.includes(`${base}*`))
        await p.es.indices.deleteIndexTemplate({ name: t.name }).catch(() => undefined);
    await p.es.indices.delete({ index: `${base}*` }).catch(() => undefined);
    await p?.cleanup();
  });

  it('installs the template at start, puts each event in the index of its own UTC ts, indexes a later copy once with one trigger, and reconcile finds nothing missing', async () => {
    port = await freePortFrom(9580);
    worker = p.spawn('w', { ...env, ...p.controlEnv(port) });
    await whileRunning(
      worker,
      'starting',
      waitFor('the worker to start', () => linesStarting(worker, 'worker started').length > 0, {
        timeoutMs: 60_000,
      }),
    );
    // Before any event: the template the worker installed, with the events mapping.
    const templates = (await p.es.indices.getIndexTemplate()).index_templates.filter((t) =>
      t.index_template.index_patterns.includes(`${base}*`),
    );
    expect(templates).toHaveLength(1);
    const mapping = templates[0]!.index_template.template?.mappings as {
      properties: Record<string, { type?: string; dynamic?: string }>;
    };
    expect(mapping.properties.ts?.type).toBe('date');
    expect(mapping.properties.data?.dynamic).toBe('runtime');
    expect((await p.es.cat.indices({ index: `${base}*`, format: 'json' })).length).toBe(0);

    const originals = EVENTS.map((e, i) => eventRecord(`c-${i}`, e.name, e.ts, { n: i }));
    await p.produce(originals);
    await whileRunning(worker, 'ingesting the originals', p.waitForEnd(60_000));
    // The copies come well after the originals were seen: outside the dedup window.
    await new Promise((r) => setTimeout(r, 2 * DEDUP_WINDOW_MS));
    const copies = [originals[0]!, originals[1]!, originals[2]!];
    await p.produce(copies);
    await whileRunning(worker, 'ingesting the copies', p.waitForEnd(60_000));

    // Each event once, in the index of its own UTC time, created by the original record.
    await p.es.indices.refresh({ index: `${base}*` });
    const wanted = EVENTS.map((e) => `${base}${e[unit]}`);
    const found = (await p.es.cat.indices({ index: `${base}*`, format: 'json' })).map((i) => i.index).sort();
    expect(found).toEqual([...new Set(wanted)].sort());
    const hits = (await p.es.search({ index: `${base}*`, size: 100, query: { match_all: {} } })).hits.hits;
    expect(hits).toHaveLength(EVENTS.length);
    const input = await readCommitted(p.names.topic);
    const expected = p.expected();
    EVENTS.forEach((e, i) => {
      const id = originals[i]!.id!;
      const hit = hits.find((h) => h._id === id);
      expect(hit?._index, `index of the event at ${e.ts}`).toBe(wanted[i]);
      const { origin, ...body } = hit!._source as { origin: { partition: number; offset: number } };
      expect(body).toEqual(JSON.parse(JSON.stringify(expected.events.get(id))));
      const first = input
        .filter((r) => JSON.parse(String(r.value)).id === id)
        .sort((a, b) => a.offset - b.offset)[0]!;
      expect(origin, `origin of ${id}: the original, not its copy`).toEqual({
        topic: p.names.topic,
        partition: first.partition,
        offset: first.offset,
      });
    });

    // The copies met their originals in Elasticsearch (no Redis, outside the window): no trigger again.
    const metrics = await scrape(port);
    expect(sumOf(metrics, 'rxingest_records_done_total', { outcome: 'duplicate' })).toBe(copies.length);
    expect(sumOf(metrics, 'rxingest_es_conflicts_total', { kind: 'event-exists' })).toBeGreaterThanOrEqual(
      copies.length,
    );
    const triggers = (await readCommitted(p.names.triggers))
      .map((t) => JSON.parse(String(t.value)).id)
      .sort();
    expect(triggers).toEqual([...expected.triggers.keys()].sort());
    expect(triggers).toHaveLength(2);
    expect(await readCommitted(p.names.dlq)).toHaveLength(0);

    // reconcile, with the worker's environment, agrees.
    const r = await runCli(['reconcile', '--json'], env, { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.events).toMatchObject({ expected: 4, found: 4, missing: 0, extra: 0 });
    expect([...report.events.indices].sort()).toEqual([...new Set(wanted)].sort());
    expect(report.duplicates).toBe(copies.length);
    expect(report.triggers).toMatchObject({ expected: 2, found: 2, missing: 0, duplicate: 0, unexpected: 0 });

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  }, 120_000);
});

function eventRecord(
  clientId: string,
  name: string,
  ts: string,
  data: Record<string, unknown>,
): WorkloadRecord {
  const id = randomUUID();
  const value = Buffer.from(JSON.stringify({ id, clientId, type: 'event', name, ts, data }));
  return { sendAtMs: 0, key: clientId, value, kind: 'event', id, clientId };
}
