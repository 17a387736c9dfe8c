import { randomUUID } from 'node:crypto';
import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  classifyValue,
  type ExpectedState,
  expectedState,
} from '../../../harness/deployment/expected-state.js';
import {
  createTopics,
  esClient,
  kafkaClient,
  type ReadRecord,
  readCommitted,
  waitFor,
} from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload, type WorkloadRecord } from '../../../src/generator/workload.js';
import { pipeline, RULES, runWorkerUntilCaughtUp } from '../../support/deployments/tool-deployment.js';

/**
 * `rxingest reconcile` against the real worker's output on the real stack: a clean run finds
 * nothing and exits 0 (its counts, stale updates and dead letters by class included, are those
 * of the independent oracle and of kcat); then the test breaks the output in seven ways and
 * reconcile finds exactly those, with examples.
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
    // Some clients' updates go out under other keys: other partitions carry them. A re-sent
    // copy goes out under its original's key, as a producer's retry would.
    let n = 0;
    const movedKey = new Map<string, string>();
    const records: WorkloadRecord[] = plan.map((r) => {
      if (r.kind === 'profile' && (r.clientId === 'c-0001' || r.clientId === 'c-0002')) {
        const key = `${r.clientId}#${n++}`;
        movedKey.set(r.id!, key);
        return { ...r, key };
      }
      const key = r.kind === 'duplicate' ? movedKey.get(r.id!) : undefined;
      return key === undefined ? r : { ...r, key };
    });
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
    // Dead letters by class: the oracle's classes of the poison it found.
    const byClass = new Map<string, number>();
    for (const p of expected.poison) byClass.set(p.errorClass, (byClass.get(p.errorClass) ?? 0) + 1);
    expect(Object.entries(report.deadLetters).sort()).toEqual([...byClass].sort());
    expect(byClass.size).toBeGreaterThanOrEqual(4);
    // Stale: recounted here from kcat's read of the input (see staleUpdates).
    const stale = staleUpdates(await readCommitted(setup.names.topic));
    expect(report.stale).toBe(stale);
    expect(stale).toBeGreaterThan(0);

    const text = await runCli(['reconcile'], setup.env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^rxingest reconcile: group /);
    expect(text.stdout).toContain('result: nothing missing or different (exit 0)');
  });

  it('finds exactly the deleted events, the extra event, the rewound field, the duplicate, removed and unexpected triggers and the lost DLQ, and exits 1', async () => {
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

    // 4. An event document no record explains.
    const extraId = `extra-${randomUUID()}`;
    await es.index({
      index: names.events,
      id: extraId,
      refresh: true,
      document: {
        clientId: 'c-0003',
        name: 'signup',
        ts: '2026-11-30T12:00:00.000Z',
        data: {},
        origin: { topic: names.topic, partition: 0, offset: 0 },
      },
    });

    // 5. A trigger no event explains, and one trigger removed (the first record of a
    // partition other than the duplicated one's, cut off with DeleteRecords).
    const triggers = await readCommitted(names.triggers);
    const gone = triggers
      .filter((t) => t.partition !== trigger.partition)
      .reduce((a, b) => (b.offset < a.offset ? b : a));
    const goneId = JSON.parse(String(gone.value)).id as string;
    const fakeId = `${randomUUID()}:welcome`;
    const fake = kafka.producer();
    await fake.connect();
    await fake.send({
      topic: names.triggers,
      messages: [
        {
          key: 'c-0003',
          value: JSON.stringify({
            id: fakeId,
            rule: 'welcome',
            trigger: 'send-welcome-email',
            clientId: 'c-0003',
            sourceId: fakeId.split(':')[0],
            ts: '2026-11-30T12:00:00.000Z',
          }),
        },
      ],
    });
    await fake.disconnect();
    await admin.fetchTopicMetadata({ topics: [names.triggers] }); // deleteTopicRecords needs it loaded
    await admin.deleteTopicRecords({
      topic: names.triggers,
      partitions: [{ partition: gone.partition, offset: String(gone.offset + 1) }],
    });

    // 6. Delete the DLQ topic and create it again, empty.
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
    expect(r.events.extra).toBe(1);
    expect(r.examples.eventsExtra).toEqual([
      { id: extraId, index: names.events, origin: `${names.topic}/0/0` },
    ]);
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
    expect(r.triggers.missing).toBe(1);
    expect(r.examples.triggersMissing).toEqual([goneId]);
    expect(r.triggers.unexpected).toBe(1);
    expect(r.examples.triggersUnexpected).toEqual([
      { id: fakeId, why: 'no unique event matches a rule with this id' },
    ]);
    expect(r.triggers.different).toBe(0);
    expect(r.dlq.found).toBe(0);
    expect(r.dlq.missing).toBe(expected.poison.length);
    expect(r.examples.deadLettersMissing).toHaveLength(Math.min(10, expected.poison.length));
    expect(r.dlq.unexpected + r.dlq.duplicate + r.dlq.differentClass).toBe(0);
    expect(r.differences).toBe(3 + 1 + 1 + 1 + 1 + 1 + expected.poison.length);

    const text = await runCli(['reconcile'], setup.env);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('events missing from the index (3):');
    expect(text.stdout).toContain(`"clientId":"c-0005","field":${JSON.stringify(field)}`);
    expect(text.stdout).toContain(`triggers published more than once (1):`);
    expect(text.stdout).toContain(`event documents no record explains (1):\n    {"id":"${extraId}"`);
    expect(text.stdout).toContain(`triggers missing (1):\n    ${goneId}\n`);
    expect(text.stdout).toContain(`triggers no event explains (1):\n    {"id":"${fakeId}"`);
    expect(text.stdout).toContain(`poison records without a dead letter (${expected.poison.length}`);
  });

  it('a bad configuration value: exit 2 with one line naming the variable, the value and what is expected', async () => {
    const res = await runCli(['reconcile', '--json'], { ...setup.env, TOMBSTONES: 'keep' });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(
      /^rxingest reconcile: invalid configuration: TOMBSTONES="keep" is invalid: expected .*dead-letter.*ignore.*delete/,
    );
  });

  it('cannot reach Kafka or Elasticsearch: exit 2 with one line naming the server, never a credential', async () => {
    const kafkaDown = await runCli(
      ['reconcile'],
      { ...setup.env, KAFKA_BROKERS: '127.0.0.1:1' },
      { timeoutMs: 120_000 },
    );
    expect(kafkaDown.code).toBe(2);
    expect(kafkaDown.stdout).toBe('');
    expect(kafkaDown.stderr.trim().split('\n')).toHaveLength(1);
    expect(kafkaDown.stderr).toMatch(/^rxingest reconcile: cannot run: cannot reach Kafka at 127\.0\.0\.1:1/);

    const esDown = await runCli(
      ['reconcile'],
      { ...setup.env, ES_NODE: 'http://elastic:s3cret-pw@127.0.0.1:1' },
      { timeoutMs: 120_000 },
    );
    expect(esDown.code).toBe(2);
    expect(esDown.stderr.trim().split('\n')).toHaveLength(1);
    expect(esDown.stderr).toMatch(
      /^rxingest reconcile: cannot run: cannot reach Elasticsearch at http:\/\/(\*\*\*:\*\*\*@)?127\.0\.0\.1:1/,
    );
    expect(esDown.stderr).not.toContain('s3cret-pw');
  });
});

/**
 * The stale profile updates of the input, recounted from the records as kcat read them: a
 * unique update (first copy of its id) is stale when its version and every field it sets are
 * already outranked — (version, id) — by the client's earlier updates in the same partition,
 * in offset order (reconcile's definition, which does not depend on how partitions interleave).
 */
function staleUpdates(records: readonly ReadRecord[]): number {
  const ordered = [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const seen = new Set<string>();
  const state = new Map<string, { version: number; fields: Map<string, { version: number; id: string }> }>();
  const outranks = (a: { version: number; id: string }, b: { version: number; id: string } | undefined) =>
    b === undefined || a.version > b.version || (a.version === b.version && a.id > b.id);
  let stale = 0;
  for (const r of ordered) {
    const verdict = classifyValue(r.value, 1024 * 1024);
    if (!verdict.ok || seen.has(verdict.message.id)) continue;
    seen.add(verdict.message.id);
    const m = verdict.message;
    if (m.type !== 'profile') continue;
    const where = `${m.clientId}\u0000${r.partition}`;
    let s = state.get(where);
    if (s === undefined) {
      s = { version: -1, fields: new Map() };
      state.set(where, s);
    }
    const stamp = { version: m.version!, id: m.id };
    const fields = Object.keys(m.data);
    if (stamp.version <= s.version && !fields.some((f) => outranks(stamp, s.fields.get(f)))) stale++;
    s.version = Math.max(s.version, stamp.version);
    for (const f of fields) if (outranks(stamp, s.fields.get(f))) s.fields.set(f, stamp);
  }
  return stale;
}
