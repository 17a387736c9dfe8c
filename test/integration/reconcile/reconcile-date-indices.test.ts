import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics, esClient, kafkaClient, stackEnv, uniqueName } from '../../../harness/stack.js';
import { loadConfig } from '../../../src/config/config.js';
import { eventsIndexFor } from '../../../src/model/event-index.js';
import { reconcile } from '../../../src/tools/reconcile/reconcile.js';

/**
 * reconcile with a date-pattern EVENTS_INDEX, against the real Kafka and Elasticsearch: the
 * output is written here by hand as the contract says the worker writes it (one index per
 * UTC day of each event's ts), so that the check of "the right index per event" is proved
 * on the real servers independently of the worker. One event sits in the wrong day's index,
 * and an index that matches the wildcard but not the pattern is left alone.
 */
describe('reconcile with EVENTS_INDEX=<prefix>-{yyyy.MM.dd}', () => {
  const kafka = kafkaClient('reconcile-date-test');
  const es = esClient();
  const name = uniqueName('recdate');
  const topic = `${name}.in`;
  const group = `${name}-group`;
  const pattern = `${name}-ev-{yyyy.MM.dd}`;
  const events = [
    { id: 'e1', ts: '2026-11-29T23:59:59.999Z' },
    { id: 'e2', ts: '2026-11-30T01:30:00+02:00' }, // 29 Nov in UTC
    { id: 'e3', ts: '2026-11-30T00:00:00Z' },
    { id: 'e4', ts: '2026-12-01T12:00' }, // no zone: UTC
  ].map((e, i) => ({ ...e, clientId: `c-${i}`, type: 'event', name: 'login', data: { i } }));

  beforeAll(async () => {
    await createTopics([{ topic, numPartitions: 1 }]);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (const e of events)
      await producer.send({ topic, messages: [{ key: e.clientId, value: JSON.stringify(e) }] });
    await producer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.setOffsets({
      groupId: group,
      topic,
      partitions: [{ partition: 0, offset: String(events.length) }],
    });
    await admin.disconnect();
    for (const [offset, e] of events.entries()) {
      const right = eventsIndexFor(pattern, e.ts);
      // e4 goes to the wrong day.
      const index = e.id === 'e4' ? eventsIndexFor(pattern, '2026-11-30T00:00:00Z') : right;
      await es.index({
        index,
        id: e.id,
        refresh: true,
        document: {
          clientId: e.clientId,
          name: e.name,
          ts: e.ts,
          data: e.data,
          origin: { topic, partition: 0, offset },
        },
      });
    }
    // Matches the wildcard `${name}-ev-*`, is not a name of the pattern: not an events index.
    await es.index({
      index: `${name}-ev-archive`,
      id: 'old',
      refresh: true,
      document: { clientId: 'c', name: 'x' },
    });
  });

  afterAll(async () => {
    await es.indices.delete({ index: `${name}-*` }).catch(() => undefined);
    await es.close();
  });

  it('looks for each event in the index of its own UTC day and reports the misplaced one', async () => {
    const config = loadConfig({
      INGEST_TOPICS: topic,
      INGEST_GROUP: group,
      DLQ_TOPIC: `${name}.dlq`,
      TRIGGERS_TOPIC: `${name}.triggers`,
      PROFILES_INDEX: `${name}-profiles`,
      EVENTS_INDEX: pattern,
      KAFKA_BROKERS: stackEnv.kafkaBrokers,
      ES_NODE: stackEnv.esNode,
    });
    const report = await reconcile(config);
    expect(report.events.indices).toEqual([`${name}-ev-2026.11.29`, `${name}-ev-2026.11.30`]);
    expect(report.events).toMatchObject({ expected: 4, found: 4, missing: 0, extra: 0, different: 1 });
    expect(report.examples.eventsDifferent).toEqual([
      {
        id: 'e4',
        index: `${name}-ev-2026.11.30`,
        why: `in ${name}-ev-2026.11.30, expected in ${name}-ev-2026.12.01`,
      },
    ]);
    expect(report.notes).toContain(`topic ${name}.dlq does not exist (read as empty)`);
    expect(report.ok).toBe(false);
  });
});
