import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Admin, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, readCommitted, uniqueName } from '../support/stack.js';

const run = promisify(execFile);

/**
 * The transaction manager's kept coordinators (patches/kafkajs+2.2.4.patch), against the real
 * broker: a transactional producer commits outputs with the consumed offsets, as the worker's
 * committer does. Published kafkajs sends four FindCoordinator requests per such transaction;
 * patched, the producer asks once per coordinator. When its connections are cut from outside
 * (`ss -K`, the kernel closing the sockets as a broker's death or an idle timeout would), the
 * kept coordinator is connected again and the next transactions commit.
 */
describe('kafkajs transactions keep their coordinators (patched), against the real broker', () => {
  const kafka = kafkaClient('transaction-coordinators-test');
  const source = `${uniqueName('coordinators')}.in`;
  const out = `${uniqueName('coordinators')}.out`;
  const group = uniqueName('coordinators-group');
  let producer: Producer;
  let admin: Admin;
  const requests: string[] = [];

  beforeAll(async () => {
    await createTopics([
      { topic: source, numPartitions: 1 },
      { topic: out, numPartitions: 1 },
    ]);
    admin = kafka.admin();
    await admin.connect();
    producer = kafka.producer({ transactionalId: `${out}-tx`, idempotent: true, maxInFlightRequests: 1 });
    producer.on(producer.events.REQUEST, ({ payload }) => requests.push(payload.apiName));
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
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

  const committedOffset = async () =>
    (await admin.fetchOffsets({ groupId: group, topics: [source] }))[0]!.partitions[0]!.offset;
  const findCoordinatorRequests = () => requests.filter((name) => name === 'GroupCoordinator').length;

  it('ten transactions with offsets ask for the coordinators twice in all, and commit every record and offset', async () => {
    for (let offset = 1; offset <= 10; offset++) await commitUpTo(offset);

    // One for the transaction coordinator (connect's InitProducerId), one for the group's.
    expect(findCoordinatorRequests()).toBe(2);
    expect(requests.filter((name) => name === 'EndTxn')).toHaveLength(10);
    expect(requests.filter((name) => name === 'TxnOffsetCommit')).toHaveLength(10);
    expect(await committedOffset()).toBe('10');
    const records = await readCommitted(out);
    expect(records.map((r) => r.value?.toString())).toEqual(
      Array.from({ length: 10 }, (_, i) => `record ${i + 1}`),
    );
  });

  it('after the producer’s connections are cut from outside, its next transactions reach the kept coordinators and commit', async () => {
    const cut = await cutConnectionsTo(9092);
    expect(cut).toBeGreaterThan(0);
    const before = findCoordinatorRequests();

    // The transaction in flight when a socket dies may fail once; the caller's retry then commits.
    for (let offset = 11; offset <= 15; offset++) await commitUpTo(offset, 3);

    expect(await committedOffset()).toBe('15');
    const records = await readCommitted(out);
    expect(records.map((r) => r.value?.toString())).toEqual(
      Array.from({ length: 15 }, (_, i) => `record ${i + 1}`),
    );
    // At most one more lookup per coordinator, for a request that failed on a cut socket.
    expect(findCoordinatorRequests() - before).toBeLessThanOrEqual(2);
  });
});

/** Closes this process's TCP connections to the local port with `ss -K`; returns how many. */
async function cutConnectionsTo(port: number): Promise<number> {
  const { stdout } = await run('ss', ['-tnpH', 'state', 'established', 'dst', `127.0.0.1:${port}`]);
  const mine = stdout
    .split('\n')
    .filter((line) => line.includes(`pid=${process.pid},`))
    .map((line) => /127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:\d+/.exec(line)?.[1])
    .filter((p): p is string => p !== undefined);
  for (const sport of mine) await run('ss', ['-K', 'dst', `127.0.0.1:${port}`, 'sport', '=', sport]);
  return mine.length;
}
