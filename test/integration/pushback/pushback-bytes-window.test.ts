import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { freePortFrom } from '../../../harness/ports.js';
import { stackEnv, waitFor } from '../../../harness/stack.js';
import { sampleGauge, scrape } from '../../../harness/worker/observation.js';
import { whileRunning } from '../../../harness/worker/process.js';
import type { WorkloadRecord } from '../../../src/generator/workload.js';
import { HttpFaultProxy } from '../../support/servers/http-fault-proxy.js';

/** 64 MB of events: four times HIGH_WATER_BYTES's default (16 MiB). */
const EVENTS = 320;
const PAYLOAD = 200 * 1024;
/** HIGH_WATER_BYTES's and KAFKA_MAX_BYTES_PER_PARTITION's defaults. */
const HIGH_WATER_BYTES = 16 * 1024 * 1024;
const FETCH_BYTES = 256 * 1024;

let p: Pipeline;
let proxy: HttpFaultProxy;

beforeAll(async () => {
  // Each bulk reaches Elasticsearch half a second late: fetching outruns the writes, so that
  // what the partition holds is bounded by the byte window alone.
  proxy = await HttpFaultProxy.to(stackEnv.esNode);
  proxy.delay(500, '/_bulk');
  p = await Pipeline.create('pb-bytes', {
    partitions: 1,
    servers: { ...stackEnv, esNode: proxy.url },
    asShipped: true,
  });
});

afterAll(async () => {
  await p?.cleanup();
  await proxy?.close();
});

/** Events of about 200 KB each: 320 of them are 64 MB, far above the window, far below HIGH_WATER records. */
function largeEvents(): WorkloadRecord[] {
  return Array.from({ length: EVENTS }, (_, i) => {
    const id = randomUUID();
    const clientId = `c-${i % 10}`;
    const value = {
      id,
      clientId,
      type: 'event',
      name: i % 4 === 0 ? 'signup' : 'view',
      ts: new Date(Date.UTC(2026, 10, 30, 12, 0, i)).toISOString(),
      data: { blob: 'x'.repeat(PAYLOAD), n: i },
    };
    return {
      sendAtMs: 0,
      key: clientId,
      value: Buffer.from(JSON.stringify(value)),
      kind: 'event',
      id,
      clientId,
    };
  });
}

describe('the in-flight window in bytes (HIGH_WATER_BYTES)', () => {
  it('at the shipped HIGH_WATER_BYTES, pauses a partition of large messages by bytes, long before HIGH_WATER records, and loses nothing', async () => {
    // Everything is in the topic before the worker starts, so fetching could run far ahead of
    // Elasticsearch: only the byte window holds it back.
    await p.produce(largeEvents());
    const port = await freePortFrom(9530);
    // HIGH_WATER_BYTES, HIGH_WATER and the fetch and batch sizes at their defaults.
    const w = p.spawn('w', p.controlEnv(port));
    await whileRunning(
      w,
      'starting',
      waitFor('the worker to serve /metrics', () => scrape(port), { timeoutMs: 90_000 }),
    );
    const bytes = sampleGauge(port, 'rxingest_in_flight_bytes', 20);
    const paused = sampleGauge(port, 'rxingest_partition_paused', 20, { reason: 'backpressure' });
    try {
      await whileRunning(w, 'draining', p.waitForEnd(180_000));
    } finally {
      bytes.stop();
      paused.stop();
    }
    await p.assertContract(p.expected());
    const most = Math.max(...bytes.values);
    process.stdout.write(
      `[bytes-window] samples ${bytes.values.length}, most in flight ${(most / 1024).toFixed(0)} KiB (window ${HIGH_WATER_BYTES / 1024} KiB, all ${((EVENTS * PAYLOAD) / 1024 ** 2).toFixed(0)} MiB), paused samples ${paused.values.filter((v) => v > 0).length}\n`,
    );
    expect(bytes.values.length).toBeGreaterThan(10);
    // Above the window by at most what was already fetched when the pause began.
    expect(most).toBeGreaterThan(HIGH_WATER_BYTES / 2);
    expect(most).toBeLessThanOrEqual(HIGH_WATER_BYTES + 4 * FETCH_BYTES);
    expect(
      paused.values.some((v) => v > 0),
      'the partition was paused at some point',
    ).toBe(true);
  }, 240_000);
});
