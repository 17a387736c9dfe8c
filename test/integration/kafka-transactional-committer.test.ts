import type { Admin, Consumer, IHeaders, Producer, Transaction } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionLostError, TransactionalCommitter } from '../../src/sinks/kafka-transactional-committer.js';
import type { OutRecord } from '../../src/sinks/ports.js';
import { createTopics, kafkaClient, uniqueName, waitFor } from '../support/stack.js';

/**
 * TransactionalCommitter against the real broker: what InMemoryCommitSink stands for
 * (a commit publishes its records and moves the partition's offset, together), plus
 * what only the real one has: a read_committed consumer never sees the records of a
 * transaction that did not commit, and a newer producer with the same transactional
 * id fences the old one.
 */

const silent = pino({ level: 'silent' });

interface Seen {
  topic: string;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
}

const headersOf = (h: IHeaders | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(h ?? {}).map(([k, v]) => [k, String(v)]));

describe('TransactionalCommitter against the real broker', () => {
  const kafka = kafkaClient('rxingest-test-committer');
  const prefix = uniqueName('rxingest-test-committer');
  const input = `${prefix}.in`;
  const out = (name: string) => `${prefix}.out-${name}`;
  const outTopics = ['atomic-triggers', 'atomic-dlq', 'fence', 'fence-point', 'midway', 'abort', 'large'].map(
    out,
  );
  const groups: string[] = [];
  const producers: Producer[] = [];
  let admin: Admin;
  const readers: Consumer[] = [];
  const committed: Seen[] = [];
  const uncommitted: Seen[] = [];

  const group = (name: string) => {
    const g = `${prefix}-${name}`;
    groups.push(g);
    return g;
  };

  /** One consumer over every output topic of this file, for the whole file (group joins are slow). */
  async function startReader(readUncommitted: boolean, into: Seen[]) {
    const consumer = kafka.consumer({
      groupId: group(readUncommitted ? 'reader-uncommitted' : 'reader-committed'),
      readUncommitted,
      maxWaitTimeInMs: 100,
    });
    readers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topics: outTopics, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, message }) => {
        into.push({
          topic,
          key: message.key?.toString() ?? null,
          value: message.value?.toString() ?? null,
          headers: headersOf(message.headers),
        });
      },
    });
  }

  const transactionalProducer = async (transactionalId: string) => {
    const p = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
    producers.push(p);
    await p.connect();
    return p;
  };

  const committerFor = (producer: Producer, groupId: string, partition: number) =>
    new TransactionalCommitter(
      producer,
      { groupId, topic: input, partition, retryBaseMs: 50, retryMaxMs: 500 },
      silent,
    );

  const offsetsOf = async (groupId: string) => {
    const [t] = await admin.fetchOffsets({ groupId, topics: [input] });
    return Object.fromEntries(t!.partitions.map((p) => [p.partition, p.offset]));
  };

  const valuesOn = (seen: Seen[], topic: string) => seen.filter((s) => s.topic === topic).map((s) => s.value);

  /**
   * A producer whose transactions stop just before `sendOffsets` (the records are then
   * in the log, inside the open transaction) until `release` is called; `fail` makes
   * sendOffsets throw instead of going on, as a failure between the two steps would.
   */
  function pausedBeforeOffsets(producer: Producer, fail?: Error) {
    let reached = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const wrapTx = (tx: Transaction): Transaction =>
      new Proxy(tx, {
        get: (target, prop, receiver) =>
          prop === 'sendOffsets'
            ? async (...args: Parameters<Transaction['sendOffsets']>) => {
                reached = true;
                await gate;
                if (fail) throw fail;
                return target.sendOffsets(...args);
              }
            : Reflect.get(target, prop, receiver),
      });
    const wrapped = new Proxy(producer, {
      get: (target, prop, receiver) =>
        prop === 'transaction'
          ? async () => wrapTx(await target.transaction())
          : Reflect.get(target, prop, receiver),
    });
    return { producer: wrapped, reached: () => reached, release };
  }

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
    await createTopics([
      { topic: input, numPartitions: 2 },
      ...outTopics.map((topic) => ({ topic, numPartitions: 1 })),
    ]);
    await Promise.all([startReader(false, committed), startReader(true, uncommitted)]);
  });

  afterAll(async () => {
    await Promise.all(readers.map((c) => c.disconnect()));
    await Promise.all(producers.map((p) => p.disconnect().catch(() => undefined)));
    // One at a time: a group that never got an offset does not exist, and must not stop the others.
    for (const g of groups) await admin.deleteGroups([g]).catch(() => undefined);
    await admin.deleteTopics({ topics: [input, ...outTopics] });
    await admin.disconnect();
  });

  it('commit publishes the records to a read_committed consumer and commits the group offset, together', async () => {
    const groupId = group('atomic');
    const producer = await transactionalProducer(TransactionalCommitter.transactionalId(groupId, input, 1));
    const committer = committerFor(producer, groupId, 1);
    expect(await offsetsOf(groupId)).toEqual({ 0: '-1', 1: '-1' });

    const records: OutRecord[] = [
      { topic: out('atomic-triggers'), key: 'c-1', value: 'trigger-1', headers: { h: '1' } },
      {
        topic: out('atomic-dlq'),
        key: Buffer.from('c-2'),
        value: Buffer.from('dead-1'),
        headers: { x: 'y' },
      },
      { topic: out('atomic-triggers'), key: 'c-3', value: 'trigger-2' },
    ];
    await committer.commit('42', records);

    // Only partition 1 moves; offset and records both show.
    await waitFor('offset 42 on partition 1', async () => (await offsetsOf(groupId))[1] === '42');
    expect((await offsetsOf(groupId))[0]).toBe('-1');
    await waitFor(
      '3 committed records',
      () => committed.filter((s) => s.topic.includes('atomic')).length >= 3,
    );
    expect(committed.filter((s) => s.topic.includes('atomic'))).toEqual(
      expect.arrayContaining([
        { topic: out('atomic-triggers'), key: 'c-1', value: 'trigger-1', headers: { h: '1' } },
        { topic: out('atomic-dlq'), key: 'c-2', value: 'dead-1', headers: { x: 'y' } },
        { topic: out('atomic-triggers'), key: 'c-3', value: 'trigger-2', headers: {} },
      ]),
    );
    expect(valuesOn(committed, out('atomic-triggers'))).toEqual(['trigger-1', 'trigger-2']);

    // A commit without records moves the offset alone.
    await committer.commit('43', []);
    await waitFor('offset 43 on partition 1', async () => (await offsetsOf(groupId))[1] === '43');
  });

  it('a second producer with the same transactional id fences the first: its next commit throws PartitionLostError', async () => {
    const groupId = group('fence');
    const txId = TransactionalCommitter.transactionalId(groupId, input, 0);
    const oldOwner = committerFor(await transactionalProducer(txId), groupId, 0);
    await oldOwner.commit('10', [{ topic: out('fence'), key: 'k', value: 'old-10' }]);

    // The partition moves: the new owner's producer takes over the transactional id.
    const newOwner = committerFor(await transactionalProducer(txId), groupId, 0);
    await newOwner.commit('10', []);

    const err = await oldOwner.commit('11', [{ topic: out('fence'), key: 'k', value: 'old-11' }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PartitionLostError);
    expect((err as Error).message).toMatch(/fenced at offset 11/);

    await newOwner.commit('12', [{ topic: out('fence'), key: 'k', value: 'new-12' }]);
    await waitFor('the new owner’s record', () => valuesOn(committed, out('fence')).includes('new-12'));
    expect(valuesOn(committed, out('fence'))).toEqual(['old-10', 'new-12']);
    await waitFor('offset 12', async () => (await offsetsOf(groupId))[0] === '12');
  });

  it('a producer fences the previous owner when it begins its first transaction, not when it connects', async () => {
    const groupId = group('fence-point');
    const txId = TransactionalCommitter.transactionalId(groupId, input, 1);
    const oldOwner = committerFor(await transactionalProducer(txId), groupId, 1);
    await oldOwner.commit('1', [{ topic: out('fence-point'), key: 'k', value: 'fp-old-1' }]);

    // Connected, but no transaction yet: kafkajs has not sent InitProducerId for the id.
    const newProducer = await transactionalProducer(txId);
    await oldOwner.commit('2', [{ topic: out('fence-point'), key: 'k', value: 'fp-old-2' }]);

    // An empty transaction, begun and aborted, bumps the epoch: from then on the old owner is out.
    await (await newProducer.transaction()).abort();
    await expect(
      oldOwner.commit('3', [{ topic: out('fence-point'), key: 'k', value: 'fp-old-3' }]),
    ).rejects.toBeInstanceOf(PartitionLostError);
    await committerFor(newProducer, groupId, 1).commit('3', [
      { topic: out('fence-point'), key: 'k', value: 'fp-new-3' },
    ]);

    await waitFor('the new owner’s record', () =>
      valuesOn(committed, out('fence-point')).includes('fp-new-3'),
    );
    expect(valuesOn(committed, out('fence-point'))).toEqual(['fp-old-1', 'fp-old-2', 'fp-new-3']);
    await waitFor('offset 3', async () => (await offsetsOf(groupId))[1] === '3');
  });

  it('fenced in the middle of a transaction: its records are aborted, invisible to read_committed, and its offset is not committed', async () => {
    const groupId = group('midway');
    const txId = TransactionalCommitter.transactionalId(groupId, input, 0);
    const paused = pausedBeforeOffsets(await transactionalProducer(txId));
    const oldOwner = committerFor(paused.producer, groupId, 0);
    const oldCommit = oldOwner.commit('21', [
      { topic: out('midway'), key: 'k', value: 'old-1' },
      { topic: out('midway'), key: 'k', value: 'old-2' },
    ]);
    oldCommit.catch(() => undefined);
    await waitFor('the old owner to have sent its records', () => paused.reached());
    // They are in the log (a read_uncommitted consumer sees them), inside an open transaction.
    await waitFor('the open transaction’s records', () => valuesOn(uncommitted, out('midway')).length === 2);

    expect(await offsetsOf(groupId)).toEqual({ 0: '-1', 1: '-1' });

    // The new owner starts: the coordinator aborts the old owner's open transaction.
    const newOwner = committerFor(await transactionalProducer(txId), groupId, 0);
    await newOwner.commit('20', [{ topic: out('midway'), key: 'k', value: 'new-1' }]);

    paused.release();
    await expect(oldCommit).rejects.toBeInstanceOf(PartitionLostError);

    await waitFor('the new owner’s record', () => valuesOn(committed, out('midway')).includes('new-1'));
    expect(valuesOn(committed, out('midway'))).toEqual(['new-1']);
    expect(valuesOn(uncommitted, out('midway'))).toEqual(['old-1', 'old-2', 'new-1']);
    await waitFor('offset 20', async () => (await offsetsOf(groupId))[0] === '20');
  });

  it('a commit that fails after sending its records aborts them: read_committed never sees them, the offset stays', async () => {
    const groupId = group('abort');
    const producer = await transactionalProducer(TransactionalCommitter.transactionalId(groupId, input, 1));
    await committerFor(producer, groupId, 1).commit('5', [
      { topic: out('abort'), key: 'k', value: 'kept-5' },
    ]);
    await waitFor('offset 5', async () => (await offsetsOf(groupId))[1] === '5');

    const failure = new Error('simulated failure between the records and the offset');
    const paused = pausedBeforeOffsets(producer, failure);
    const failing = committerFor(paused.producer, groupId, 1).commit('7', [
      { topic: out('abort'), key: 'k', value: 'aborted-6' },
    ]);
    failing.catch(() => undefined);
    await waitFor('the records to be in the log', () =>
      valuesOn(uncommitted, out('abort')).includes('aborted-6'),
    );
    paused.release();
    await expect(failing).rejects.toBe(failure); // not retried, not mistaken for fencing
    expect(await offsetsOf(groupId)).toMatchObject({ 1: '5' });

    // The producer is usable again: the next commit goes through.
    await committerFor(producer, groupId, 1).commit('8', [
      { topic: out('abort'), key: 'k', value: 'kept-8' },
    ]);
    await waitFor('the later record', () => valuesOn(committed, out('abort')).includes('kept-8'));
    expect(valuesOn(committed, out('abort'))).toEqual(['kept-5', 'kept-8']);
    await waitFor('offset 8', async () => (await offsetsOf(groupId))[1] === '8');
  });

  it('publishes large dead letters within the topic limit: chunked requests, and a value too big for the topic truncated', async () => {
    // The topic keeps Kafka's default max.message.bytes (about 1 MiB).
    const producer = await transactionalProducer(`${prefix}-large`);
    const committer = committerFor(producer, group('large'), 1);
    const big = (c: string, n: number) => c.repeat(n);
    const records: OutRecord[] = [
      {
        topic: out('large'),
        key: 'a',
        value: big('a', 700 * 1024),
        headers: { 'x-error-class': 'too-large' },
      },
      {
        topic: out('large'),
        key: 'b',
        value: big('b', 700 * 1024),
        headers: { 'x-error-class': 'too-large' },
      },
      {
        topic: out('large'),
        key: 'c',
        value: big('c', 700 * 1024),
        headers: { 'x-error-class': 'too-large' },
      },
      {
        topic: out('large'),
        key: 'd',
        value: big('d', 1536 * 1024),
        headers: { 'x-error-class': 'too-large' },
      },
    ];
    await committer.commit('7', records);
    const seen = await waitFor('four large records', () => {
      const s = committed.filter((x) => x.topic === out('large'));
      return s.length >= 4 ? s : false;
    });
    expect(seen.map((x) => [x.key, x.value?.length])).toEqual([
      ['a', 700 * 1024],
      ['b', 700 * 1024],
      ['c', 700 * 1024],
      ['d', 64 * 1024],
    ]);
    expect(seen[3]!.headers['x-value-truncated']).toBe(`${1536 * 1024} bytes, first ${64 * 1024} kept`);
    expect(seen[3]!.headers['x-error-class']).toBe('too-large');
    expect((await offsetsOf(group('large')))[1]).toBe('7');
  });
});
