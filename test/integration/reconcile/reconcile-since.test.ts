import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esClient, kafkaClient, waitFor } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload, type WorkloadRecord } from '../../../src/generator/workload.js';
import { pipeline, runWorkerUntilCaughtUp } from '../../support/deployments/tool-deployment.js';

/**
 * `rxingest reconcile --since ISO` on the real stack: messages are sent in two phases with a
 * known instant between them, so every record's Kafka timestamp is on one side of it. With
 * `--since` the instant, only the second phase is read: a document missing from the first
 * phase is not a difference (it is "not judged"), one missing from the second is.
 */
describe('rxingest reconcile --since on the real worker output', () => {
  let kafka: Kafka;
  let admin: Admin;
  let es: Client;
  let setup: Awaited<ReturnType<typeof pipeline>>;
  let since: Date;
  const before: WorkloadRecord[] = [];
  const after: WorkloadRecord[] = [];

  const phase = (seed: number) =>
    planWorkload({ seed, count: 400, ratePerSec: 20_000, clients: 40, duplicateShare: 0, poisonShare: 0.02 });
  const events = (rs: readonly WorkloadRecord[]) => rs.filter((r) => r.kind === 'event').map((r) => r.id!);

  beforeAll(async () => {
    kafka = kafkaClient('reconcile-since-test');
    admin = kafka.admin();
    await admin.connect();
    es = esClient();
    setup = await pipeline('reconcile-since', { partitions: 2 });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await runProducer(
      { topic: setup.names.topic, records: phase(301) },
      { producer, onSent: (rs) => before.push(...rs) },
    );
    // The producer stamps each record with its send time: wait until the clock has passed the
    // instant, so the first phase is strictly before it and the second at or after it.
    since = new Date(Date.now() + 1);
    await waitFor('the clock to pass the --since instant', async () => Date.now() > since.getTime() + 1, {
      timeoutMs: 1_000,
      intervalMs: 2,
    });
    await runProducer(
      { topic: setup.names.topic, records: phase(302) },
      { producer, onSent: (rs) => after.push(...rs) },
    );
    await producer.disconnect();
    await runWorkerUntilCaughtUp(admin, setup.env, setup.names, `${setup.names.group}-worker`);
    await es.indices.refresh({ index: [setup.names.profiles, setup.names.events] });
  });

  afterAll(async () => {
    await admin?.disconnect();
    await es?.close();
  });

  it('reads only the messages at or after the instant and judges only what they imply', async () => {
    expect(before).toHaveLength(400);
    expect(after).toHaveLength(400);
    const res = await runCli(['reconcile', '--json', '--since', since.toISOString()], setup.env);
    const report = JSON.parse(res.stdout);
    expect(report.examples, res.stdout.slice(0, 3000)).toEqual({});
    expect(res.code).toBe(0);
    expect(report.since).toBe(since.toISOString());
    expect(report.messages).toBe(after.length);
    expect(report.events.expected).toBe(events(after).length);
    expect(report.events.found).toBe(events(after).length);
    // The first phase's events are in the index, outside what was read.
    expect(report.events.notJudged).toBe(events(before).length);

    const whole = JSON.parse((await runCli(['reconcile', '--json'], setup.env)).stdout);
    expect(whole.messages).toBe(before.length + after.length);
    expect(whole.events.expected).toBe(events(before).length + events(after).length);
  });

  it('a document missing from before the instant is not judged; one from after it is, and exits 1', async () => {
    const [early] = events(before);
    const [late] = events(after);
    for (const id of [early!, late!]) await es.delete({ index: setup.names.events, id, refresh: true });

    const res = await runCli(['reconcile', '--json', '--since', since.toISOString()], setup.env);
    expect(res.code, res.stderr).toBe(1);
    const report = JSON.parse(res.stdout);
    expect(report.events.missing).toBe(1);
    expect(report.examples.eventsMissing).toEqual([late]);
    expect(report.differences).toBe(1);

    const text = await runCli(['reconcile', '--since', since.toISOString()], setup.env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`since ${since.toISOString()}`);
    expect(text.stdout).toContain('events missing from the index (1):');

    const whole = JSON.parse((await runCli(['reconcile', '--json'], setup.env)).stdout);
    expect(whole.events.missing).toBe(2);
    expect([...whole.examples.eventsMissing].sort()).toEqual([early, late].sort());
  });

  it('an instant after every message reads nothing and finds nothing different', async () => {
    const later = new Date(Date.now() + 60_000).toISOString();
    const res = await runCli(['reconcile', '--json', '--since', later], setup.env);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report.messages).toBe(0);
    expect(report.events.expected).toBe(0);
  });

  it('an --since that is not a time: exit 2 with one line naming the option', async () => {
    const res = await runCli(['reconcile', '--since', 'yesterday-ish'], setup.env);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toContain('--since "yesterday-ish" is invalid');
  });
});
