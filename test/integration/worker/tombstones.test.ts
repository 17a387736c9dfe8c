import { randomUUID } from 'node:crypto';
import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../harness/ports.js';
import { parsePrometheusText, sumOf } from '../../../harness/prometheus-text.js';
import { esClient, kafkaClient, readCommitted, waitFor } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { spawnWorker } from '../../../harness/worker/process.js';
import { caughtUp, pipeline } from '../../support/deployments/tool-deployment.js';

/**
 * TOMBSTONES through the real worker, one deployment per mode: a record with a null value
 * is a dead letter of class `tombstone` (the default), ignored (counted and committed), or
 * the deletion of the profile of the client its key names. Each run ends with the group's
 * offsets at the partition's end.
 */
const profile = (clientId: string, version: number, data: Record<string, unknown>) => ({
  key: clientId,
  value: JSON.stringify({
    id: randomUUID(),
    clientId,
    type: 'profile',
    version,
    ts: new Date().toISOString(),
    data,
  }),
});
const tombstone = (clientId: string) => ({ key: clientId, value: null });

/** t-1 updated then deleted; t-2 only updated; t-3 updated, deleted, and updated again. */
const RECORDS = [
  profile('t-1', 1, { plan: 'free' }),
  profile('t-2', 1, { plan: 'pro' }),
  profile('t-3', 1, { plan: 'free', city: 'Oslo' }),
  profile('t-1', 2, { plan: 'team' }),
  tombstone('t-1'),
  tombstone('t-3'),
  profile('t-3', 2, { plan: 'pro' }),
];

interface Run {
  readonly names: Awaited<ReturnType<typeof pipeline>>['names'];
  readonly env: Record<string, string>;
  readonly metrics: ReturnType<typeof parsePrometheusText>;
  readonly exitCode: number | string;
}

describe('TOMBSTONES through the real worker', () => {
  let kafka: Kafka;
  let admin: Admin;
  let es: Client;

  beforeAll(async () => {
    kafka = kafkaClient('tombstones-test');
    admin = kafka.admin();
    await admin.connect();
    es = esClient();
  });

  afterAll(async () => {
    await admin?.disconnect();
    await es?.close();
  });

  /** Produces RECORDS to a fresh deployment, runs a worker until it committed them all, scrapes it, stops it. */
  async function run(mode: string | undefined): Promise<Run> {
    const setup = await pipeline(`tomb-${mode ?? 'default'}`, {
      partitions: 1,
      extraEnv: mode === undefined ? {} : { TOMBSTONES: mode },
    });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: setup.names.topic, messages: RECORDS });
    await producer.disconnect();
    const port = await freePort();
    const worker = spawnWorker({ ...setup.env, HTTP_PORT: String(port) }, `${setup.names.group}-worker`);
    try {
      await waitFor(
        'the worker to commit the whole input',
        () => caughtUp(admin, kafka, setup.names.topic, setup.names.group),
        { timeoutMs: 120_000, intervalMs: 300 },
      );
      const metrics = await waitFor('the worker to count every record', async () => {
        const text = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
        return sumOf(text, 'rxingest_records_done_total') === RECORDS.length ? text : undefined;
      });
      worker.child.kill('SIGTERM');
      const exitCode = await worker.exited;
      await es.indices.refresh({ index: setup.names.profiles, ignore_unavailable: true });
      return { names: setup.names, env: setup.env, metrics, exitCode };
    } finally {
      worker.child.kill('SIGKILL');
    }
  }

  const profileOf = async (index: string, id: string) => {
    const r = await es.get<{ data: Record<string, unknown>; version: number }>(
      { index, id },
      { ignore: [404] },
    );
    return r.found ? r._source : undefined;
  };

  let deadLettered: Run | undefined;

  it('default (dead-letter): the tombstone is a dead letter of class tombstone with its key and no value', async () => {
    const r = await run(undefined);
    deadLettered = r;
    expect(r.exitCode).toBe(0);
    const dlq = await readCommitted(r.names.dlq);
    expect(dlq.map((d) => [d.key, d.value, d.headers['x-error-class']])).toEqual(
      expect.arrayContaining([
        ['t-1', null, 'tombstone'],
        ['t-3', null, 'tombstone'],
      ]),
    );
    expect(dlq).toHaveLength(2);
    expect(dlq.every((d) => d.headers['x-source-topic'] === r.names.topic)).toBe(true);
    expect(sumOf(r.metrics, 'rxingest_dead_letters_total', { class: 'tombstone' })).toBe(2);
    // Nothing deleted: the profiles keep what their updates set.
    expect((await profileOf(r.names.profiles, 't-1'))?.data).toEqual({ plan: 'team' });
    expect((await profileOf(r.names.profiles, 't-3'))?.data).toEqual({ plan: 'pro', city: 'Oslo' });
  });

  it('dlq replay keeps a tombstone dead letter while TOMBSTONES=dead-letter, and puts it back as a tombstone (null value) under delete', async () => {
    const r = deadLettered!;
    const kept = await runCli(['dlq', 'replay'], r.env);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toContain(`replayed 0 dead letters from ${r.names.dlq}`);
    expect(kept.stdout).toContain('still poison with the current settings (skipped): 2 (tombstone 2)');
    expect(kept.stdout).toContain('tombstone: a tombstone, and TOMBSTONES=dead-letter');

    const put = await runCli(['dlq', 'replay'], { ...r.env, TOMBSTONES: 'delete' });
    expect(put.code, put.stderr).toBe(0);
    expect(put.stdout.split('\n')[0]).toBe(`replayed 2 dead letters from ${r.names.dlq} (tombstone 2)`);
    const input = await readCommitted(r.names.topic);
    const replayed = input.filter((x) => x.offset >= RECORDS.length);
    expect(replayed.map((x) => [x.key, x.value]).sort()).toEqual([
      ['t-1', null],
      ['t-3', null],
    ]);
    expect(replayed.every((x) => x.headers['x-replay-of']?.startsWith(`${r.names.dlq}/`))).toBe(true);
  });

  it('ignore: counted as ignored and committed; no dead letter, no profile touched', async () => {
    const r = await run('ignore');
    expect(r.exitCode).toBe(0);
    expect(await readCommitted(r.names.dlq)).toHaveLength(0);
    expect(sumOf(r.metrics, 'rxingest_records_done_total', { outcome: 'ignored' })).toBe(2);
    expect(sumOf(r.metrics, 'rxingest_dead_letters_total')).toBe(0);
    expect((await profileOf(r.names.profiles, 't-1'))?.data).toEqual({ plan: 'team' });
    expect((await profileOf(r.names.profiles, 't-2'))?.data).toEqual({ plan: 'pro' });
  });

  it("delete: the key's profile document is deleted; an update after the tombstone creates it anew", async () => {
    const r = await run('delete');
    expect(r.exitCode).toBe(0);
    expect(await readCommitted(r.names.dlq)).toHaveLength(0);
    expect(sumOf(r.metrics, 'rxingest_records_done_total', { outcome: 'deleted' })).toBe(2);
    expect(await profileOf(r.names.profiles, 't-1')).toBeUndefined();
    expect((await profileOf(r.names.profiles, 't-2'))?.data).toEqual({ plan: 'pro' });
    const t3 = await profileOf(r.names.profiles, 't-3');
    expect(t3?.data).toEqual({ plan: 'pro' });
    expect(t3?.version).toBe(2);
  });
});
