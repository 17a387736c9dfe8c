import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProducer } from '../../src/generator/produce.js';
import { planWorkload, type WorkloadRecord } from '../../src/generator/workload.js';
import { type ExpectedState, expectedState } from '../support/expected-state.js';
import { createTopics, esClient, kafkaClient, readCommitted, waitFor } from '../support/stack.js';
import { pipeline, RULES, runCli, runWorkerUntilCaughtUp } from '../support/tool-deployment.js';

/**
 * `rxingest reconcile` against the real worker's output on the real stack: a clean run finds
 * nothing and exits 0 (its counts are those of the independent oracle and of kcat); then the
 * test breaks the output in four ways and reconcile finds exactly those, with examples.
 */
describe('rxingest reconcile on the real worker output', () => {
  let kafka: Kafka;
  let admin: Admin;
  let es: Client;
  let setup: Awaited<ReturnType<typeof pipeline>>;
  let expected: ExpectedState;

  beforeAll(async () => {
    kafka = kafkaClient('reconcile-test');
    admin = kafka.admin();
    await admin.connect();
    es = esClient();
    setup = await pipeline('reconcile');
    const plan = planWorkload({
      seed: 81,
      count: 4_000,
      ratePerSec: 20_000,
      clients: 80,
      duplicateShare: 0.03,
      poisonShare: 0.02,
      shuffleVersions: 0.2,
    });
    // Some clients' updates go out under other keys: other partitions carry them.
    let n = 0;
    const records: WorkloadRecord[] = plan.map((r) =>
      r.kind === 'profile' && (r.clientId === 'c-0001' || r.clientId === 'c-0002')
        ? { ...r, key: `${r.clientId}#${n++}` }
        : r,
    );
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: WorkloadRecord[] = [];
    await runProducer({ topic: setup.names.topic, records }, { producer, onSent: (rs) => sent.push(...rs) });
    await producer.disconnect();
    expected = expectedState(
      sent.map((r) => r.value),
      { rules: RULES },
    );
    await runWorkerUntilCaughtUp(admin, setup.env, setup.names, `${setup.names.group}-worker`);
    await es.indices.refresh({ index: [setup.names.profiles, setup.names.events] });
  });

  afterAll(async () => {
    await admin?.disconnect();
    await es?.close();
  });

  it("a clean run reports no difference and exits 0; its counts are the oracle's and kcat's", async () => {
    const res = await runCli(['reconcile', '--json'], setup.env);
    const report = JSON.parse(res.stdout);
    expect(report.examples, res.stdout.slice(0, 3000)).toEqual({});
    expect(res.code).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.messages).toBe(4_000);
    expect(report.duplicates).toBe(expected.duplicates);
    expect(report.events.expected).toBe(expected.events.size);
    expect(report.events.found).toBe(expected.events.size);
    expect(report.profiles.expected).toBe(expected.profiles.size);
    expect(report.profiles.found).toBe(expected.profiles.size);
    expect(report.triggers.expected).toBe(expected.triggers.size);
    // The triggers topic read by kafkajs (patched) has exactly kcat's count.
    const kcatTriggers = await readCommitted(setup.names.triggers);
    expect(report.triggers.found).toBe(kcatTriggers.length);
    expect(report.triggers.found).toBe(expected.triggers.size);
    expect(report.dlq.expected).toBe(expected.poison.length);
    expect(report.dlq.found).toBe((await readCommitted(setup.names.dlq)).length);
    expect(report.beyondCommitted.total).toBe(0);

    const text = await runCli(['reconcile'], setup.env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^rxingest reconcile: group /);
    expect(text.stdout).toContain('result: nothing missing or different (exit 0)');
  });

  it('finds exactly the deleted events, the rewound field, the duplicate trigger and the lost DLQ, and exits 1', async () => {
    const { names } = setup;
    // 1. Delete three event documents.
    const some = await es.search<{ clientId: string }>({ index: names.events, size: 3, sort: ['_doc'] });
    const deleted = some.hits.hits.map((h) => h._id!);
    expect(deleted).toHaveLength(3);
    for (const id of deleted) await es.delete({ index: names.events, id, refresh: true });

    // 2. Rewind one profile field to an older value and version.
    const profile = (
      await es.get<{
        data: Record<string, unknown>;
        fieldVersions: Record<string, { version: number; id: string }>;
      }>({
        index: names.profiles,
        id: 'c-0005',
      })
    )._source!;
    const field = Object.keys(profile.data).sort()[0]!;
    const stamp = profile.fieldVersions[field]!;
    await es.update({
      index: names.profiles,
      id: 'c-0005',
      refresh: true,
      doc: {
        data: { [field]: 'an older value' },
        fieldVersions: { [field]: { version: stamp.version - 1, id: stamp.id } },
      },
    });

    // 3. Publish one trigger a second time.
    const trigger = (await readCommitted(names.triggers))[0]!;
    const triggerId = JSON.parse(String(trigger.value)).id as string;
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: names.triggers, messages: [{ key: trigger.key, value: trigger.value }] });
    await producer.disconnect();

    // 4. Delete the DLQ topic and create it again, empty.
    const dlqPartitions = (await admin.fetchTopicOffsets(names.dlq)).length;
    await admin.deleteTopics({ topics: [names.dlq] });
    await waitFor('the DLQ topic to be gone', async () => !(await admin.listTopics()).includes(names.dlq));
    await waitFor(
      'the DLQ topic to be created again',
      async () => {
        await createTopics([{ topic: names.dlq, numPartitions: dlqPartitions }]).catch(() => undefined);
        return (
          (await admin.listTopics()).includes(names.dlq) &&
          (await admin.fetchTopicOffsets(names.dlq)).length > 0
        );
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );

    const res = await runCli(['reconcile', '--json'], setup.env);
    expect(res.code, res.stderr).toBe(1);
    const r = JSON.parse(res.stdout);
    expect(r.ok).toBe(false);
    expect(r.events.missing).toBe(3);
    expect([...r.examples.eventsMissing].sort()).toEqual([...deleted].sort());
    expect(r.events.extra).toBe(0);
    expect(r.events.different).toBe(0);
    expect(r.profiles.different).toBe(1);
    expect(r.examples.profilesDifferent).toEqual([
      {
        clientId: 'c-0005',
        field,
        expected: { value: profile.data[field], version: stamp.version, id: stamp.id },
        found: { value: 'an older value', version: stamp.version - 1, id: stamp.id },
      },
    ]);
    expect(r.profiles.missing + r.profiles.extra).toBe(0);
    expect(r.triggers.duplicate).toBe(1);
    expect(r.examples.triggersDuplicate).toEqual([{ id: triggerId, times: 2 }]);
    expect(r.triggers.missing + r.triggers.unexpected + r.triggers.different).toBe(0);
    expect(r.dlq.found).toBe(0);
    expect(r.dlq.missing).toBe(expected.poison.length);
    expect(r.examples.deadLettersMissing).toHaveLength(Math.min(10, expected.poison.length));
    expect(r.dlq.unexpected + r.dlq.duplicate + r.dlq.differentClass).toBe(0);
    expect(r.differences).toBe(3 + 1 + 1 + expected.poison.length);

    const text = await runCli(['reconcile'], setup.env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('events missing from the index (3):');
    expect(text.stdout).toContain(`"clientId":"c-0005","field":${JSON.stringify(field)}`);
    expect(text.stdout).toContain(`triggers published more than once (1):`);
    expect(text.stdout).toContain(`poison records without a dead letter (${expected.poison.length}`);
  });

  it('cannot reach Kafka or Elasticsearch: exit 2 with one line naming the server, never a credential', async () => {
    const kafkaDown = await runCli(['reconcile'], { ...setup.env, KAFKA_BROKERS: '127.0.0.1:1' }, 120_000);
    expect(kafkaDown.code).toBe(2);
    expect(kafkaDown.stdout).toBe('');
    expect(kafkaDown.stderr.trim().split('\n')).toHaveLength(1);
    expect(kafkaDown.stderr).toMatch(/^rxingest reconcile: cannot run: cannot reach Kafka at 127\.0\.0\.1:1/);

    const esDown = await runCli(
      ['reconcile'],
      { ...setup.env, ES_NODE: 'http://elastic:s3cret-pw@127.0.0.1:1' },
      120_000,
    );
    expect(esDown.code).toBe(2);
    expect(esDown.stderr.trim().split('\n')).toHaveLength(1);
    expect(esDown.stderr).toMatch(
      /^rxingest reconcile: cannot run: cannot reach Elasticsearch at http:\/\/(\*\*\*:\*\*\*@)?127\.0\.0\.1:1/,
    );
    expect(esDown.stderr).not.toContain('s3cret-pw');
  });
});
