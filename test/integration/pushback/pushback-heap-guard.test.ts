import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../harness/ports.js';
import { parsePrometheusText, sumOf } from '../../../harness/prometheus-text.js';
import { esClient, kafkaClient, stackEnv, waitFor } from '../../../harness/stack.js';
import { atShippedDefaults, logTail, spawnWorker, whileRunning } from '../../../harness/worker/process.js';
import { caughtUp, pipeline } from '../../support/deployments/tool-deployment.js';
import { TcpProxy } from '../../support/servers/tcp-proxy.js';

/**
 * Memory push-back against the real stack: a worker whose V8 heap is capped far below what
 * its partitions may hold in flight (8 partitions × HIGH_WATER_BYTES 16 MiB of 48 KB events,
 * against a 96 MB old space). Elasticsearch stops answering (its traffic is held by a proxy)
 * while the events arrive, so they pile up in the graphs. The live heap reaches
 * HEAP_PAUSE_RATIO of the limit, every partition is paused with reason `memory`, and once
 * Elasticsearch answers again the worker drains and goes on instead of dying with "heap out
 * of memory". With the guard off (HEAP_PAUSE_RATIO=1) the same run ends the process. A second
 * run puts the resume line below what the worker holds with nothing in flight: intake must
 * resume once the graphs are drained, or the rest of the events would stay in Kafka.
 */
const PARTITIONS = 8;
const EVENTS = 2_400;
const PAYLOAD = 'x'.repeat(48 * 1024);
const HEAP_CAP_MB = Number(process.env.HEAP_GUARD_TEST_CAP_MB ?? 96);

describe('memory push-back: a capped heap pauses intake instead of ending the worker', () => {
  let kafka: Kafka;
  let admin: Admin;
  let proxy: TcpProxy;

  beforeAll(async () => {
    kafka = kafkaClient('heap-guard-test');
    admin = kafka.admin();
    await admin.connect();
    proxy = await TcpProxy.to(stackEnv.esNode);
  });

  afterAll(async () => {
    proxy?.release();
    await proxy?.shut();
    await admin?.disconnect();
  });

  async function produceEvents(topic: string) {
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
      await producer.send({ topic, messages });
    }
    await producer.disconnect();
  }

  /**
   * One worker through the whole story: owns the partitions, Elasticsearch held, the events
   * produced, every partition paused for memory, Elasticsearch released, everything
   * committed, a clean stop. Returns its log and the most partitions seen paused for memory.
   */
  async function heldAndReleased(env: Record<string, string> = {}) {
    const setup = await pipeline('heap-guard', { partitions: PARTITIONS, extraEnv: { ES_NODE: proxy.url } });
    const port = await freePort();
    // Every setting at its default but the heap cap and what the test names: HEAP_PAUSE_RATIO
    // 0.7, HEAP_RESUME_RATIO 0.5, and the commits, retries and session as shipped.
    const worker = spawnWorker(
      {
        ...atShippedDefaults(setup.env),
        HTTP_PORT: String(port),
        NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB} ${process.env.HEAP_GUARD_TEST_FLAGS ?? ''}`,
        ...(process.env.HEAP_GUARD_TEST_RATIO ? { HEAP_PAUSE_RATIO: process.env.HEAP_GUARD_TEST_RATIO } : {}),
        ...env,
      },
      `${setup.names.group}-worker`,
    );
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
      await whileRunning(
        worker,
        'waiting to own every partition',
        waitFor('the worker to own every partition', async () => {
          const text = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
          return (
            sumOf(text, 'rxingest_partition_paused', { reason: 'starting' }) === 0 &&
            readFileSync(worker.logFile, 'utf8').split('partition assigned').length > PARTITIONS
          );
        }),
      );
      proxy.hold();
      await whileRunning(worker, 'the events were produced', produceEvents(setup.names.topic));
      await whileRunning(
        worker,
        'waiting for every partition to pause for memory',
        waitFor('every partition paused for memory', () => pausedForMemory === PARTITIONS, {
          timeoutMs: 60_000,
          intervalMs: 100,
        }),
      );
      proxy.release();
      await whileRunning(
        worker,
        'draining',
        waitFor(
          'the worker to commit every event',
          () => caughtUp(admin, kafka, setup.names.topic, setup.names.group),
          {
            timeoutMs: 150_000,
            intervalMs: 500,
          },
        ),
      );
    } catch (err) {
      worker.child.kill('SIGKILL');
      const message = String(err);
      throw new Error(
        message.includes(' ends:\n') ? message : `${message}\n${worker.logFile} ends:\n${logTail(worker)}`,
      );
    } finally {
      clearInterval(sampler);
      proxy.release();
    }
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);

    const es = esClient();
    try {
      await es.indices.refresh({ index: setup.names.events });
      const indexed = (await es.count({ index: setup.names.events })).count;
      return { log: readFileSync(worker.logFile, 'utf8'), mostPausedForMemory, indexed };
    } finally {
      await es.close();
    }
  }

  // The heap guard's resume lines only: the breaker's half-open line says "intake resumed" too.
  const HEAP_RESUMED = /MB( in use)?: intake resumed/;

  it('at the shipped HEAP_* settings, pauses every partition (reason memory) while the live heap is high, drains everything, never dies', async () => {
    const { log, mostPausedForMemory, indexed } = await heldAndReleased();
    const started = JSON.parse(log.split('\n').find((l) => l.includes('"msg":"worker started"'))!);
    // The cap was in force, and the guard measures against it.
    expect(started.heapLimitMb).toBe(HEAP_CAP_MB);
    expect(mostPausedForMemory).toBe(PARTITIONS);
    expect(log).toContain('intake paused on every partition until in-flight work is done');
    expect(log).toMatch(HEAP_RESUMED);
    expect(indexed).toBe(EVENTS);
  }, 300_000);

  it('resumes once nothing is in flight though the heap stays above a resume line it cannot reach', async () => {
    // 0.2 of 96 MB is below what the worker itself holds with no record in flight: only the
    // drained rule can let intake go on, and the rest of the events are still in Kafka.
    const { log, mostPausedForMemory, indexed } = await heldAndReleased({ HEAP_RESUME_RATIO: '0.2' });
    expect(mostPausedForMemory).toBe(PARTITIONS);
    const resumed = log
      .split('\n')
      .filter((l) => HEAP_RESUMED.test(l))
      .map((l) => JSON.parse(l));
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.every((r) => r.reason === 'drained' && r.usedMb > 0.2 * HEAP_CAP_MB)).toBe(true);
    expect(indexed).toBe(EVENTS);
  }, 300_000);
});
