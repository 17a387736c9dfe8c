import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { freePortFrom } from '../../../harness/ports.js';
import { scrapedSum } from '../../../harness/worker/observation.js';
import { type WorkerProcess, whileRunning } from '../../../harness/worker/process.js';
import type { WorkloadRecord } from '../../../src/generator/workload.js';

/**
 * REDIS_LOOKUP_BACKOFF_MS against the real servers: on a stream of new events the worker
 * asks Redis about far fewer batches than it writes (each lookup that finds no copy makes
 * the next wait longer), and once the longest wait has passed, copies are asked about again,
 * found in Redis and decided duplicates without a `create` in Elasticsearch; the contract
 * state (each event once, each trigger once) holds throughout.
 */

const BACKOFF_MS = 400;
const event = (clientId: string, name: string, sendAtMs: number): WorkloadRecord => {
  const id = randomUUID();
  const value = Buffer.from(
    JSON.stringify({
      id,
      clientId,
      ts: new Date().toISOString(),
      type: 'event',
      name,
      data: { n: sendAtMs },
    }),
  );
  return { sendAtMs, key: clientId, value, kind: 'event', id, clientId };
};
/** The same message again (a producer's re-send): same id and bytes, another offset. */
const copyOf = (r: WorkloadRecord): WorkloadRecord => ({ ...r, sendAtMs: 0 });

describe('a real worker paces its Redis lookups while they find no copy', () => {
  let p: Pipeline;
  let worker: WorkerProcess;
  let port: number;
  const metric = (name: string, labels: Record<string, string> = {}) => scrapedSum(port, name, labels);
  const calls = (stage: string) => metric('rxingest_stage_duration_seconds_count', { stage });

  beforeAll(async () => {
    p = await Pipeline.create('lookup-pacing', { partitions: 1 });
  });
  afterAll(async () => {
    await p?.cleanup();
  });

  it('asks about fewer batches than it writes on new events, asks again after the longest wait and finds the copies there, each event and trigger once', async () => {
    port = await freePortFrom(9580);
    worker = p.spawn('w', {
      ...p.controlEnv(port),
      REDIS_LOOKUP_BACKOFF_MS: String(BACKOFF_MS),
      // Copies must reach Redis, not the in-memory window; a batch every few records.
      DEDUP_WINDOW_MS: '1',
      BATCH_MS: '20',
    });

    // One event first: the worker is in the group and at the partition's end before the stream.
    await p.produce([event('c-0', 'view', 0)]);
    await whileRunning(worker, 'starting', p.waitForEnd(60_000));
    // Then 60 new events over 3 s, one every 50 ms (a tenth of them signups, which trigger).
    const stream = Array.from({ length: 60 }, (_, i) =>
      event(`c-${i % 7}`, i % 10 === 0 ? 'signup' : 'view', i * 50),
    );
    await p.produce(stream);
    await whileRunning(worker, 'ingesting the stream of new events', p.waitForEnd(60_000));
    const lookups = await calls('redis-lookup');
    const writes = await calls('write-events');
    expect(lookups, 'the first batch is asked about').toBeGreaterThanOrEqual(1);
    expect(writes, 'the stream came in many batches').toBeGreaterThanOrEqual(20);
    expect(lookups, `${lookups} lookups for ${writes} batches written`).toBeLessThan(writes / 2);
    expect(await metric('rxingest_records_done_total', { outcome: 'duplicate' })).toBe(0);

    // The longest wait passes with no batch at all: the next batch is asked about.
    await sleep(BACKOFF_MS + 100);
    const conflicts = await metric('rxingest_es_conflicts_total', { kind: 'event-exists' });
    const copies = [stream[0]!, stream[10]!, stream[25]!, stream[59]!].map(copyOf);
    await p.produce(copies);
    await whileRunning(worker, 'deciding the copies', p.waitForEnd(60_000));
    expect(await calls('redis-lookup')).toBeGreaterThan(lookups);
    expect(await metric('rxingest_records_done_total', { outcome: 'duplicate' })).toBe(copies.length);
    expect(
      await metric('rxingest_es_conflicts_total', { kind: 'event-exists' }),
      'copies Redis knew never reach Elasticsearch',
    ).toBe(conflicts);

    await p.assertContract(p.expected());
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  }, 120_000);
});
