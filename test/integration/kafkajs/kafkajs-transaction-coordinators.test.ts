import { type Admin, Kafka, logLevel, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTopics,
  kafkaClient,
  readCommitted,
  stackEnv,
  uniqueName,
  waitFor,
} from '../../../harness/stack.js';
import { KafkaProxy } from '../../support/servers/kafka-proxy.js';

/**
 * The transaction manager's kept coordinators (patches/kafkajs+2.2.4.patch), against the real
 * broker: a transactional producer commits outputs with the consumed offsets, as the worker's
 * committer does. Published kafkajs sends four FindCoordinator requests per such transaction;
 * patched, the producer asks once per coordinator. The producer reaches the broker through a
 * KafkaProxy: when its connections are cut (as a broker's death or an idle timeout would), the
 * kept coordinator is connected again and the next transactions commit.
 */
describe('kafkajs transactions keep their coordinators (patched), against the real broker', () => {
  const kafka = kafkaClient('transaction-coordinators-test');
  const source = `${uniqueName('coordinators')}.in`;
  const out = `${uniqueName('coordinators')}.out`;
  const group = uniqueName('coordinators-group');
  let producer: Producer;
  let admin: Admin;
  let proxy: KafkaProxy;
  const requests: string[] = [];

  beforeAll(async () => {
    await createTopics([
      { topic: source, numPartitions: 1 },
      { topic: out, numPartitions: 1 },
    ]);
    admin = kafka.admin();
    await admin.connect();
    proxy = await KafkaProxy.to(stackEnv.kafkaBrokers);
    const throughProxy = new Kafka({
      clientId: 'transaction-coordinators-test',
      brokers: [proxy.brokers],
      logLevel: logLevel.NOTHING,
    });
    producer = throughProxy.producer({
      transactionalId: `${out}-tx`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    producer.on(producer.events.REQUEST, ({ payload }) => requests.push(payload.apiName));
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
    await proxy?.shut();
  });

  /** One transaction: a record out, and the source offset `offset` committed for the group. */
  async function commitUpTo(offset: number, attempts = 1): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const txn = await producer.transaction();
      try {
        await txn.send({ topic: out, messages: [{ key: String(offset), value: `record ${offset}` }] });
        await txn.sendOffsets({
          consumerGroupId: group,
          topics: [{ topic: source, partitions: [{ partition: 0, offset: String(offset) }] }],
        });
        await txn.commit();
        return;
      } catch (err) {
        await txn.abort().catch(() => undefined);
        if (attempt >= attempts) throw err;
      }
    }
  }

  const readOffset = async () =>
    (await admin.fetchOffsets({ groupId: group, topics: [source] }))[0]!.partitions[0]!.offset;
  /**
   * The group's offset once it reaches `wanted`, else the last one read after 10 s. A
   * committed transaction's offsets become readable when its markers are written, which the
   * coordinator does just after it answers EndTxn: a read at once may still see the one before.
   */
  const committedOffset = (wanted: string) =>
    waitFor(
      `the group's offset to reach ${wanted}`,
      async () => ((await readOffset()) === wanted ? wanted : undefined),
      { timeoutMs: 10_000, intervalMs: 100 },
    ).catch(() => readOffset());
  const findCoordinatorRequests = () => requests.filter((name) => name === 'GroupCoordinator').length;

  it('ten transactions with offsets ask for the coordinators twice in all, and commit every record and offset', async () => {
    for (let offset = 1; offset <= 10; offset++) await commitUpTo(offset);

    // One for the transaction coordinator (connect's InitProducerId), one for the group's.
    expect(findCoordinatorRequests()).toBe(2);
    expect(requests.filter((name) => name === 'EndTxn')).toHaveLength(10);
    expect(requests.filter((name) => name === 'TxnOffsetCommit')).toHaveLength(10);
    expect(await committedOffset('10')).toBe('10');
    const records = await readCommitted(out);
    expect(records.map((r) => r.value?.toString())).toEqual(
      Array.from({ length: 10 }, (_, i) => `record ${i + 1}`),
    );
  });

  it('after the producer’s connections are cut from outside, its next transactions reach the kept coordinators and commit', async () => {
    const cut = await proxy.shut();
    await proxy.open();
    expect(cut).toBeGreaterThan(0);
    const before = findCoordinatorRequests();

    // The transaction in flight when a socket dies may fail once; the caller's retry then commits.
    for (let offset = 11; offset <= 15; offset++) await commitUpTo(offset, 3);

    expect(await committedOffset('15')).toBe('15');
    const records = await readCommitted(out);
    expect(records.map((r) => r.value?.toString())).toEqual(
      Array.from({ length: 15 }, (_, i) => `record ${i + 1}`),
    );
    // At most one more lookup per coordinator, for a request that failed on a cut socket.
    expect(findCoordinatorRequests() - before).toBeLessThanOrEqual(2);
  });
});
