import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, sumOf } from '../support/prometheus-text.js';
import { esClient, kafkaClient, stackEnv, waitFor } from '../support/stack.js';
import { freePort, TcpProxy } from '../support/tcp-proxy.js';
import { caughtUp, pipeline } from '../support/tool-deployment.js';
import { spawnWorker } from '../support/worker-process.js';

/**
 * Memory push-back against the real stack: a worker whose V8 heap is capped far below what
 * its partitions may hold in flight (8 partitions × HIGH_WATER_BYTES 16 MiB of 48 KB events,
 * against a 96 MB old space). Elasticsearch stops answering (its traffic is held by a proxy)
 * while the events arrive, so they pile up in the graphs. The live heap reaches
 * HEAP_PAUSE_RATIO of the limit, every partition is paused with reason `memory`, and once
 * Elasticsearch answers again the worker drains and goes on instead of dying with "heap out
 * of memory". With the guard off (HEAP_PAUSE_RATIO=1) the same run ends the process.
 */
const PARTITIONS = 8;
const EVENTS = 2_400;
const PAYLOAD = 'x'.repeat(48 * 1024);
const HEAP_CAP_MB = Number(process.env.HEAP_GUARD_TEST_CAP_MB ?? 96);

describe('memory push-back: a capped heap pauses intake instead of ending the worker', () => {
  let kafka: Kafka;
  let admin: Admin;
  let proxy: TcpProxy;
  let setup: Awaited<ReturnType<typeof pipeline>>;

  beforeAll(async () => {
    kafka = kafkaClient('heap-guard-test');
    admin = kafka.admin();
    await admin.connect();
    proxy = await TcpProxy.to(stackEnv.esNode);
    setup = await pipeline('heap-guard', { partitions: PARTITIONS, extraEnv: { ES_NODE: proxy.url } });
  });

  afterAll(async () => {
    proxy?.release();
    await proxy?.shut();
    await admin?.disconnect();
  });

  async function produceEvents() {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const ts = new Date().toISOString();
    for (let sent = 0; sent < EVENTS; sent += 40) {
      const messages = Array.from({ length: 40 }, (_, i) => {
        const clientId = `h-${(sent + i) % 97}`;
        return {
          key: clientId,
          value: JSON.stringify({
            id: randomUUID(),
            clientId,
            type: 'event',
            name: 'upload',
            ts,
            data: { n: sent + i, blob: PAYLOAD },
          }),
        };
      });
      await producer.send({ topic: setup.names.topic, messages });
    }
    await producer.disconnect();
  }

  it('pauses every partition (reason memory) while the live heap is high, drains everything, never dies', async () => {
    const port = await freePort();
    const worker = spawnWorker(
      {
        ...setup.env,
        HTTP_PORT: String(port),
        NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB} ${process.env.HEAP_GUARD_TEST_FLAGS ?? ''}`,
        ...(process.env.HEAP_GUARD_TEST_RATIO ? { HEAP_PAUSE_RATIO: process.env.HEAP_GUARD_TEST_RATIO } : {}),
      },
      `${setup.names.group}-worker`,
    );
    let exited: number | string | undefined;
    void worker.exited.then((code) => {
      exited = code;
    });
    const alive = () => {
      if (exited !== undefined) throw new Error(`the worker exited (${exited}); see ${worker.logFile}`);
    };
    let pausedForMemory = 0;
    let mostPausedForMemory = 0;
    const sampler = setInterval(async () => {
      try {
        const text = parsePrometheusText(
          await (
            await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2_000) })
          ).text(),
        );
        pausedForMemory = sumOf(text, 'rxingest_partition_paused', { reason: 'memory' });
        mostPausedForMemory = Math.max(mostPausedForMemory, pausedForMemory);
      } catch {
        // not listening yet, or busy: the next sample
      }
    }, 100);
    try {
      await waitFor('the worker to own every partition', async () => {
        alive();
        const text = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
        return (
          sumOf(text, 'rxingest_partition_paused', { reason: 'starting' }) === 0 &&
          readFileSync(worker.logFile, 'utf8').split('partition assigned').length > PARTITIONS
        );
      });
      proxy.hold();
      await produceEvents();
      await waitFor(
        'every partition paused for memory',
        () => {
          alive();
          return pausedForMemory === PARTITIONS;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      proxy.release();
      await waitFor(
        'the worker to commit every event',
        async () => {
          alive();
          return caughtUp(admin, kafka, setup.names.topic, setup.names.group);
        },
        { timeoutMs: 240_000, intervalMs: 500 },
      );
    } finally {
      clearInterval(sampler);
      proxy.release();
    }
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);

    const log = readFileSync(worker.logFile, 'utf8');
    const started = JSON.parse(log.split('\n').find((l) => l.includes('"msg":"worker started"'))!);
    // The cap was in force, and the guard measures against it.
    expect(started.heapLimitMb).toBe(HEAP_CAP_MB);
    expect(mostPausedForMemory).toBe(PARTITIONS);
    expect(log).toContain('intake paused on every partition until in-flight work is done');
    expect(log).toMatch(/intake resumed/);

    const es = esClient();
    try {
      await es.indices.refresh({ index: setup.names.events });
      expect((await es.count({ index: setup.names.events })).count).toBe(EVENTS);
    } finally {
      await es.close();
    }
  });
});
