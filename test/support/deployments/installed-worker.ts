import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { esClient, kafkaClient, waitFor } from '../../../harness/stack.js';
import { logTail, type WorkerProcess, whileRunning } from '../../../harness/worker/process.js';
import { caughtUp, pipeline } from './tool-deployment.js';

/**
 * What the install tests ask of a worker installed one way or another (the container
 * recipe, a clone, a packed tarball): that it starts, indexes a few messages, commits them,
 * and stops with exit 0 on SIGTERM. Each test file starts its own copy on its own deployment.
 */
export interface InstallDeployment {
  readonly names: Awaited<ReturnType<typeof pipeline>>['names'];
  readonly env: Record<string, string>;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly es: Client;
  close(): Promise<void>;
}

export async function installDeployment(prefix: string): Promise<InstallDeployment> {
  const { name, names, env } = await pipeline(prefix, { partitions: 2 });
  const kafka = kafkaClient(`${name}-probe`);
  const admin = kafka.admin();
  await admin.connect();
  const es = esClient();
  return {
    names,
    env,
    kafka,
    admin,
    es,
    async close() {
      await admin.deleteTopics({ topics: [names.topic, names.dlq, names.triggers] }).catch(() => undefined);
      await admin.deleteGroups([names.group]).catch(() => undefined);
      await es.indices
        .delete({ index: [names.events, names.profiles], ignore_unavailable: true })
        .catch(() => undefined);
      await admin.disconnect();
      await es.close();
    },
  };
}

/** Waits for the worker's "worker started" line (before it, a SIGTERM would simply kill it). */
export async function started(worker: WorkerProcess, timeoutMs = 90_000): Promise<void> {
  await whileRunning(
    worker,
    'waiting for it to start',
    waitFor(
      'the worker to start',
      () => readFileSync(worker.logFile, 'utf8').includes('"msg":"worker started"'),
      {
        timeoutMs,
      },
    ),
  );
}

/**
 * Sends `count` events with fresh ids, then waits until every one of them is a document of
 * the events index and the group has committed the whole input. Returns the ids.
 */
export async function ingestsAFew(
  worker: WorkerProcess,
  d: InstallDeployment,
  count = 12,
): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  const producer = d.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await producer.send({
      topic: d.names.topic,
      messages: ids.map((id, i) => {
        const clientId = `c-${i % 3}`;
        const value = {
          id,
          clientId,
          type: 'event',
          ts: new Date().toISOString(),
          name: 'purchase',
          data: { n: i },
        };
        return { key: clientId, value: JSON.stringify(value) };
      }),
    });
  } finally {
    await producer.disconnect();
  }
  await whileRunning(
    worker,
    'waiting for the events to be indexed',
    waitFor(
      `${count} events in ${d.names.events}`,
      async () => {
        const res = await d.es.mget({ index: d.names.events, ids });
        return res.docs.every((doc) => 'found' in doc && doc.found);
      },
      { timeoutMs: 60_000, intervalMs: 300 },
    ),
  );
  await whileRunning(
    worker,
    'waiting for the commit',
    waitFor('the whole input committed', () => caughtUp(d.admin, d.kafka, d.names.topic, d.names.group), {
      timeoutMs: 60_000,
      intervalMs: 300,
    }),
  );
  return ids;
}

/** SIGTERM, then the exit code; the log's last lines come with a failure. */
export async function stopWithSigterm(
  worker: WorkerProcess,
): Promise<{ code: number | string; tail: string }> {
  worker.child.kill('SIGTERM');
  const code = await worker.exited;
  return { code, tail: logTail(worker) };
}

/** Starts the worker on its own deployment, checks it ingests, stops it; returns its exit code. */
export async function startIngestStop(
  prefixName: string,
  spawn: (env: Record<string, string>, label: string) => WorkerProcess,
): Promise<{ code: number | string; tail: string }> {
  const d = await installDeployment(prefixName);
  let worker: WorkerProcess | undefined;
  try {
    worker = spawn(d.env, `${d.names.group}-${prefixName}`);
    await started(worker);
    await ingestsAFew(worker, d);
    return await stopWithSigterm(worker);
  } finally {
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    await d.close();
  }
}
