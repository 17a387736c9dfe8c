import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProducer } from '../../src/generator/produce.js';
import { planWorkload, type WorkloadRecord } from '../../src/generator/workload.js';
import { type ExpectedState, expectedState } from '../support/expected-state.js';
import {
  createTopics,
  esClient,
  kafkaClient,
  readCommitted,
  stackEnv,
  uniqueName,
  waitFor,
} from '../support/stack.js';
import { spawnWorker } from '../support/worker-process.js';

const PARTITIONS = 8;
const RULES = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' }];

/**
 * The contract end to end, against the real Kafka, Elasticsearch and Redis:
 * 20,000 messages over 8 partitions and 200 clients, 2% re-sent ids (inside
 * and far outside the dedup window), profile versions shuffled and a few
 * clients' updates spread over other partitions, 1% poison, one trigger rule.
 * The expected state is computed independently (test/support/expected-state.ts).
 */
describe('worker end to end', () => {
  let kafka: Kafka;
  let admin: Admin;
  let es: Client;

  beforeAll(async () => {
    kafka = kafkaClient();
    admin = kafka.admin();
    await admin.connect();
    es = esClient();
  });
  afterAll(async () => {
    await admin.disconnect();
    await es.close();
  });

  /** A fresh, isolated deployment: its own topics, group, indices and Redis key prefix. */
  async function setup(seed: number) {
    const name = uniqueName('e2e');
    const names = {
      topic: `${name}.in`,
      dlq: `${name}.dlq`,
      triggers: `${name}.triggers`,
      group: `${name}-group`,
      profiles: `${name}-profiles`,
      events: `${name}-events`,
    };
    await createTopics([
      { topic: names.topic, numPartitions: PARTITIONS },
      {
        topic: names.dlq,
        numPartitions: 2,
        configEntries: [{ name: 'max.message.bytes', value: '4194304' }],
      },
      { topic: names.triggers, numPartitions: 2 },
    ] as never);
    // Oversize poison must reach the input topic for the worker to dead-letter it.
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: 2, name: names.topic, configEntries: [{ name: 'max.message.bytes', value: '4194304' }] },
      ],
    });
    const rulesFile = join(tmpdir(), `${name}-rules.json`);
    writeFileSync(rulesFile, JSON.stringify(RULES));
    const env = {
      INGEST_TOPICS: names.topic,
      INGEST_GROUP: names.group,
      DLQ_TOPIC: names.dlq,
      TRIGGERS_TOPIC: names.triggers,
      PROFILES_INDEX: names.profiles,
      EVENTS_INDEX: names.events,
      TRIGGER_RULES: rulesFile,
      KAFKA_BROKERS: stackEnv.kafkaBrokers,
      ES_NODE: stackEnv.esNode,
      REDIS_URL: stackEnv.redisUrl,
      REDIS_KEY_PREFIX: `${name}:`,
      DEDUP_WINDOW_MS: '1000',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      COMMIT_INTERVAL_MS: '200',
    };

    const plan = planWorkload({
      seed,
      count: 20_000,
      ratePerSec: 8_000,
      clients: 200,
      duplicateShare: 0.01,
      duplicateDelayMs: { min: 10, max: 500 }, // inside the 1 s window
      lateDuplicateShare: 0.01,
      lateDuplicateDelayMs: { min: 2_000, max: 3_000 }, // far outside it: Redis must catch these
      poisonShare: 0.01,
      shuffleVersions: 0.1,
    });
    // A few clients' profile updates go out under other keys, so other partitions carry them:
    // the merge must hold when partitions race on one profile document.
    const spread = new Set(['c-0001', 'c-0002', 'c-0003']);
    let n = 0;
    const records: WorkloadRecord[] = plan.map((r) =>
      r.kind === 'profile' && r.clientId !== undefined && spread.has(r.clientId)
        ? { ...r, key: `${r.clientId}#${n++}` }
        : r,
    );
    return { names, env, records };
  }

  async function produce(topic: string, records: WorkloadRecord[]) {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: WorkloadRecord[] = [];
    await runProducer({ topic, records }, { producer, onSent: (rs) => sent.push(...rs) });
    await producer.disconnect();
    return sent;
  }

  async function committedEqualsEnd(topic: string, group: string) {
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId: group, topics: [topic] }),
    ]);
    const c = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
    return ends.every((e) => c.get(e.partition) === e.high);
  }

  async function committedTotal(topic: string, group: string) {
    const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return committed[0]!.partitions.reduce((a, p) => a + Math.max(0, Number(p.offset)), 0);
  }

  /** Waits until about a third of the 20,000 records are committed: the moment to disturb a worker. */
  async function aThirdCommitted(names: Awaited<ReturnType<typeof setup>>['names']) {
    await waitFor(
      'a third of the records committed',
      async () => (await committedTotal(names.topic, names.group)) > 6_000,
      {
        timeoutMs: 60_000,
        intervalMs: 100,
      },
    );
  }

  /** Waits until the group's committed offsets reach every partition's end, then checks the contract. */
  async function assertContractOnceDone(
    names: Awaited<ReturnType<typeof setup>>['names'],
    expected: ExpectedState,
  ) {
    await waitFor(
      'committed offsets at the end of every partition',
      () => committedEqualsEnd(names.topic, names.group),
      {
        timeoutMs: 120_000,
        intervalMs: 500,
      },
    );
    await assertContract(names, expected);
  }

  async function assertContract(names: Awaited<ReturnType<typeof setup>>['names'], expected: ExpectedState) {
    expect(await committedEqualsEnd(names.topic, names.group)).toBe(true);
    await es.indices.refresh({ index: [names.profiles, names.events] });

    // Events: each unique event indexed once, with the contract's _source.
    const events = await searchAll(es, names.events);
    expect(events.size).toBe(expected.events.size);
    for (const [id, doc] of expected.events) expect(events.get(id), `event ${id}`).toEqual(doc);

    // Profiles: the merge rule, independent of order, duplicates and partitions.
    const profiles = await searchAll(es, names.profiles);
    expect(profiles.size).toBe(expected.profiles.size);
    for (const [clientId, doc] of expected.profiles) {
      const got = profiles.get(clientId) as { version: number; data: unknown } | undefined;
      expect({ version: got?.version, data: got?.data }, `profile ${clientId}`).toEqual(
        JSON.parse(JSON.stringify(doc)),
      );
    }

    // Triggers: each matching event exactly once (read_committed).
    const triggers = await readCommitted(names.triggers);
    const ids = triggers.map((t) => JSON.parse(String(t.value)).id as string);
    expect(ids.length).toBe(expected.triggers.size);
    expect(new Set(ids).size).toBe(ids.length);
    for (const t of triggers) {
      const value = JSON.parse(String(t.value));
      expect(value).toEqual(JSON.parse(JSON.stringify(expected.triggers.get(value.id))));
      expect(t.key).toBe(value.clientId);
    }

    // Dead letters: every poison message, with its bytes and the contract headers.
    const dlq = await readCommitted(names.dlq);
    expect(dlq.length).toBe(expected.poison.length);
    const dlqValues = dlq.map((d) => (d.value === null ? 'null' : d.value.toString('base64'))).sort();
    const poisonValues = expected.poison
      .map((p) => (p.value === null ? 'null' : p.value.toString('base64')))
      .sort();
    expect(dlqValues).toEqual(poisonValues);
    for (const d of dlq) {
      expect(d.headers['x-error-class']).toMatch(/^(invalid-json|schema|too-large)$/);
      expect(d.headers['x-error-message']?.length).toBeGreaterThan(0);
      expect(d.headers['x-source-topic']).toBe(names.topic);
      expect(Number(d.headers['x-source-partition'])).toBeLessThan(PARTITIONS);
      expect(d.headers['x-source-offset']).toMatch(/^\d+$/);
    }
  }

  it('ingests 20,000 messages to exactly the contract state', async () => {
    const { names, env, records } = await setup(11);
    const worker = spawnWorker(env, `${names.group}-worker`);
    try {
      const sent = await produce(names.topic, records);
      const expected = expectedState(
        sent.map((r) => r.value),
        { rules: RULES },
      );
      expect(expected.poison.length).toBeGreaterThan(100);
      expect(expected.duplicates).toBeGreaterThan(200);
      expect(expected.triggers.size).toBeGreaterThan(100);
      await assertContractOnceDone(names, expected);
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    }
  });

  it('reaches the same state when the worker is SIGKILLed mid-run and started again', async () => {
    const { names, env, records } = await setup(12);
    const first = spawnWorker(env, `${names.group}-first`);
    const sent = await produce(names.topic, records);
    const expected = expectedState(
      sent.map((r) => r.value),
      { rules: RULES },
    );
    // Kill it while work is committed in part: some triggers out, some not yet.
    await aThirdCommitted(names);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const before = await committedTotal(names.topic, names.group);
    expect(before).toBeLessThan(sent.length);

    const second = spawnWorker(env, `${names.group}-second`);
    try {
      await assertContractOnceDone(names, expected);
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
  });

  it('reaches the same state with two workers sharing the group while one of them leaves', async () => {
    const { names, env, records } = await setup(13);
    const a = spawnWorker(env, `${names.group}-a`);
    const b = spawnWorker(env, `${names.group}-b`);
    try {
      const sent = await produce(names.topic, records);
      const expected = expectedState(
        sent.map((r) => r.value),
        { rules: RULES },
      );
      await aThirdCommitted(names);
      // A leaves cleanly mid-run: its partitions move to B, whose producers fence A's.
      a.child.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      await assertContractOnceDone(names, expected);
    } finally {
      a.child.kill('SIGTERM');
      b.child.kill('SIGTERM');
      expect(await b.exited).toBe(0);
    }
  });
});

async function searchAll(es: Client, index: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  let res = await es.search({ index, size: 5000, scroll: '1m', query: { match_all: {} } });
  while (res.hits.hits.length > 0) {
    for (const h of res.hits.hits) out.set(h._id!, h._source);
    res = await es.scroll({ scroll_id: res._scroll_id!, scroll: '1m' });
  }
  if (res._scroll_id) await es.clearScroll({ scroll_id: res._scroll_id });
  return out;
}
