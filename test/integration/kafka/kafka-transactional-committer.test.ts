import type { Admin, Kafka, Producer, ProducerConfig, Transaction } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, readCommitted, uniqueName, waitFor } from '../../../harness/stack.js';
import { createRetryPolicy, retrying } from '../../../src/retry/retry-policy.js';
import { ProgressLedger } from '../../../src/sinks/kafka/progress-ledger.js';
import {
  CommitFailedError,
  PartitionLostError,
  TransactionalCommitter,
} from '../../../src/sinks/kafka/transactional-committer.js';
import type { OutRecord } from '../../../src/sinks/ports.js';

/**
 * TransactionalCommitter against the real broker: what InMemoryCommitSink stands for (a
 * commit publishes its records and moves the partition's offset, together), plus what only
 * the real one has: records of a transaction that did not commit stay invisible to
 * read_committed (read with kcat, not kafkajs), opening a partition fences its previous
 * owner, and the highest offset ever committed survives a reset of the group's offsets.
 */

const silent = pino({ level: 'silent' });
const retry = createRetryPolicy({ baseMs: 100, maxMs: 1_000 });
const textOf = (r: { value: Buffer | null }) => r.value?.toString('utf8') ?? null;

describe('TransactionalCommitter against the real broker', () => {
  const kafka = kafkaClient('rxingest-test-committer');
  const prefix = uniqueName('rxingest-test-committer');
  const input = `${prefix}.in`;
  const progress = `${prefix}.progress`;
  const out = (name: string) => `${prefix}.out-${name}`;
  const outTopics = ['atomic', 'fence', 'midway', 'abort', 'large', 'large-triggers', 'lowered', 'reset'].map(
    out,
  );
  const groups: string[] = [];
  const opened: TransactionalCommitter[] = [];
  let admin: Admin;

  const group = (name: string) => {
    const g = `${prefix}-${name}`;
    groups.push(g);
    return g;
  };

  /** Opens the partition as a worker would; `wrap` lets a test get between the transaction's steps. */
  async function open(
    groupId: string,
    partition: number,
    wrap?: (p: Producer) => Producer,
    onRetry?: (reason: string) => void,
  ) {
    const factory = wrap
      ? ({ producer: (cfg: ProducerConfig) => wrap(kafka.producer(cfg)) } as unknown as Kafka)
      : kafka;
    const ledger = new ProgressLedger(kafka, admin, progress, silent);
    const o = await TransactionalCommitter.open(
      factory,
      admin,
      ledger,
      { groupId, topic: input, partition, progressTopic: progress, retry, ...(onRetry ? { onRetry } : {}) },
      silent,
    );
    opened.push(o.committer);
    return o;
  }

  const offsetsOf = async (groupId: string) => {
    const [t] = await retrying(retry, () => admin.fetchOffsets({ groupId, topics: [input] }), {
      maxRetries: 6,
    });
    return Object.fromEntries(
      t!.partitions.map((p) => [p.partition, { offset: p.offset, metadata: p.metadata }]),
    );
  };

  /**
   * Wraps a producer so that its transactions stop just before `sendOffsets` (the records
   * are then in the log, inside the open transaction) until `release` is called; `fail`
   * makes sendOffsets throw instead, as a failure between the two steps would.
   */
  function pausedBeforeOffsets(fail?: Error) {
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
    let armed = false;
    const wrap = (producer: Producer): Producer =>
      new Proxy(producer, {
        get: (target, prop, receiver) =>
          prop === 'transaction'
            ? async () => {
                const tx = await target.transaction();
                // The first transaction is the fencing one at open(): let it through.
                if (!armed) {
                  armed = true;
                  return tx;
                }
                return wrapTx(tx);
              }
            : Reflect.get(target, prop, receiver),
      });
    return { wrap, reached: () => reached, release };
  }

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
    await createTopics([
      { topic: input, numPartitions: 2 },
      { topic: progress, numPartitions: 1 },
      ...outTopics.map((topic) => ({ topic, numPartitions: 1 })),
    ]);
  });

  afterAll(async () => {
    await Promise.all(opened.map((c) => c.close().catch(() => undefined)));
    for (const g of groups) await admin.deleteGroups([g]).catch(() => undefined);
    await admin.deleteTopics({ topics: [input, progress, ...outTopics] });
    await admin.disconnect();
  });

  it('commit publishes the records, moves the group offset and records the highest offset, together', async () => {
    const groupId = group('atomic');
    const { committer, committed, replayedBelow } = await open(groupId, 1);
    expect(committed).toBeUndefined();
    expect(replayedBelow).toBeUndefined();

    const records: OutRecord[] = [
      { topic: out('atomic'), key: 'c-1', value: 'trigger-1', headers: { h: '1' } },
      { topic: out('atomic'), key: Buffer.from('c-2'), value: Buffer.from('dead-1'), headers: { x: 'y' } },
    ];
    await committer.commit('42', records);
    // EndTxn answers once the commit is decided; its markers (and the offset) land just after.
    await waitFor('offset 42 on partition 1', async () => (await offsetsOf(groupId))[1]?.offset === '42');
    const offsets = await offsetsOf(groupId);
    expect(offsets[1]?.offset).toBe('42');
    expect(offsets[1]?.metadata).toBe('rxingest:highest=42');
    expect(offsets[0]?.offset).toBe('-1');
    const seen = await readCommitted(out('atomic'));
    expect(seen.map((r) => [r.key, textOf(r), r.headers])).toEqual([
      ['c-1', 'trigger-1', { h: '1' }],
      ['c-2', 'dead-1', { x: 'y' }],
    ]);
    const ledger = await readCommitted(progress);
    expect(ledger.map((r) => [r.key, textOf(r)])).toContainEqual([
      ProgressLedger.keyOf(groupId, input, 1),
      '{"committed":"42"}',
    ]);

    // A commit without records moves the offset alone.
    await committer.commit('43', []);
    await waitFor('offset 43 on partition 1', async () => (await offsetsOf(groupId))[1]?.offset === '43');
  });

  it('opening a partition fences its previous owner, then reads the committed offset', async () => {
    const groupId = group('fence');
    const old = await open(groupId, 0);
    await old.committer.commit('10', [{ topic: out('fence'), key: 'k', value: 'old-10' }]);

    const next = await open(groupId, 0);
    expect(next.committed).toBe('10');
    expect(next.replayedBelow).toBeUndefined();
    const err = await old.committer.commit('11', [{ topic: out('fence'), key: 'k', value: 'old-11' }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PartitionLostError);
    expect((err as Error).message).toMatch(/fenced at offset 11/);
    await next.committer.commit('12', [{ topic: out('fence'), key: 'k', value: 'new-12' }]);
    expect((await readCommitted(out('fence'))).map(textOf)).toEqual(['old-10', 'new-12']);
    await waitFor('offset 12', async () => (await offsetsOf(groupId))[0]?.offset === '12');
  });

  it('fenced in the middle of a transaction: its records stay invisible and its offset is not committed', async () => {
    const groupId = group('midway');
    const paused = pausedBeforeOffsets();
    const old = await open(groupId, 1, paused.wrap);
    const oldCommit = old.committer.commit('21', [{ topic: out('midway'), key: 'k', value: 'old-1' }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    await waitFor('the old owner inside its transaction', () => paused.reached(), { timeoutMs: 10_000 });
    // The new owner fences: the old owner's open transaction is aborted.
    const next = await open(groupId, 1);
    expect(next.committed).toBeUndefined();
    paused.release();
    expect(await oldCommit).toBeInstanceOf(PartitionLostError);
    await next.committer.commit('20', [{ topic: out('midway'), key: 'k', value: 'new-1' }]);
    expect((await readCommitted(out('midway'))).map(textOf)).toEqual(['new-1']);
    await waitFor('offset 20', async () => (await offsetsOf(groupId))[1]?.offset === '20');
  });

  it('a commit that fails after sending its records is a CommitFailedError: nothing of it is visible', async () => {
    const groupId = group('abort');
    const first = await open(groupId, 0);
    await first.committer.commit('5', [{ topic: out('abort'), key: 'k', value: 'a-5' }]);
    await first.committer.close();
    const failing = pausedBeforeOffsets(new Error('coordinator went away'));
    const second = await open(groupId, 0, failing.wrap);
    failing.release();
    const err = await second.committer.commit('7', [{ topic: out('abort'), key: 'k', value: 'a-7' }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CommitFailedError);
    expect((await readCommitted(out('abort'))).map(textOf)).toEqual(['a-5']);
    expect((await offsetsOf(groupId))[0]?.offset).toBe('5');
  });

  it('publishes large dead letters within the topic limit: chunked requests, and a value too big for the topic truncated before it is sent', async () => {
    const groupId = group('large');
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: 2, name: out('large'), configEntries: [{ name: 'max.message.bytes', value: '600000' }] },
      ],
    });
    const retries: string[] = [];
    const { committer } = await open(groupId, 0, undefined, (reason) => retries.push(reason));
    const big = (n: number, kb: number): OutRecord => ({
      topic: out('large'),
      key: `k-${n}`,
      value: Buffer.alloc(kb * 1024, 0x61 + n),
      headers: { 'x-source-offset': String(n) },
    });
    await committer.commit('7', [big(0, 300), big(1, 300), big(2, 300), big(3, 900)]);
    const seen = await readCommitted(out('large'));
    expect(seen.map((r) => r.key)).toEqual(['k-0', 'k-1', 'k-2', 'k-3']);
    expect(seen.slice(0, 3).every((r) => r.value?.length === 300 * 1024)).toBe(true);
    expect(seen[3]!.value!.length).toBe(64 * 1024);
    expect(seen[3]!.headers['x-value-truncated']).toBe(`${900 * 1024} bytes, first ${64 * 1024} kept`);
    // The limit was read before the transaction: nothing refused, no transaction aborted, so
    // even a reader of uncommitted records sees each record once.
    expect(retries).toEqual([]);
    const uncommitted = await readCommitted(out('large'), { isolation: 'read_uncommitted' });
    expect(uncommitted.map((r) => r.key)).toEqual(['k-0', 'k-1', 'k-2', 'k-3']);
  });

  it('a limit lowered after it was read: the refusal reads it again, and the commit goes again fitted to it', async () => {
    const groupId = group('lowered');
    const limit = (bytes: number) =>
      admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            type: 2,
            name: out('lowered'),
            configEntries: [{ name: 'max.message.bytes', value: String(bytes) }],
          },
        ],
      });
    await limit(200_000);
    const retries: string[] = [];
    const { committer } = await open(groupId, 0, undefined, (reason) => retries.push(reason));
    const dead = (n: number): OutRecord => ({
      topic: out('lowered'),
      key: `k-${n}`,
      value: Buffer.alloc(150_000, 0x61 + n),
      headers: { 'x-source-offset': String(n) },
    });
    await committer.commit('1', [dead(1)]);
    expect(retries).toEqual([]);
    // Lowered while the committer runs: it still believes 200000, the broker refuses the
    // whole 150 kB record (nothing of it is written), one transaction is aborted.
    await limit(20_000);
    await committer.commit('2', [dead(2)]);
    expect(retries).toEqual(['too-large']);
    const seen = await readCommitted(out('lowered'), { isolation: 'read_uncommitted' });
    expect(seen.map((r) => r.key)).toEqual(['k-1', 'k-2']);
    expect(seen[0]!.value!.length).toBe(150_000);
    const kept = seen[1]!.value!.length;
    expect(kept).toBeLessThan(20_000);
    expect(seen[1]!.headers['x-value-truncated']).toBe(`150000 bytes, first ${kept} kept`);
    // The next oversized one is fitted before it is sent: no refusal.
    await committer.commit('3', [dead(3)]);
    expect(retries).toEqual(['too-large']);
  });

  it('triggers sent in one request with a dead letter too large for its topic are published once it is truncated', async () => {
    const groupId = group('large-triggers');
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: 2, name: out('large'), configEntries: [{ name: 'max.message.bytes', value: '200000' }] },
      ],
    });
    const { committer } = await open(groupId, 1);
    const trigger = (i: number): OutRecord => ({
      topic: out('large-triggers'),
      key: `c-${i}`,
      value: `trigger-${i}`,
    });
    const deadLetter: OutRecord = {
      topic: out('large'),
      key: 'k-big',
      value: Buffer.alloc(250 * 1024, 0x7a),
    };
    // One chunk (under 512 KiB): the triggers' partition and the refused record share a produce request.
    await committer.commit('9', [trigger(0), trigger(1), trigger(2), deadLetter, trigger(3), trigger(4)]);
    expect((await readCommitted(out('large-triggers'))).map(textOf)).toEqual(
      [0, 1, 2, 3, 4].map((i) => `trigger-${i}`),
    );
    const dead = (await readCommitted(out('large'))).find((r) => r.key === 'k-big');
    expect(dead?.headers['x-value-truncated']).toBe(`${250 * 1024} bytes, first ${64 * 1024} kept`);
  });

  it('after the group offsets are reset, reopening says how far work was committed before (offset metadata lost, ledger kept)', async () => {
    const groupId = group('reset');
    const first = await open(groupId, 1);
    await first.committer.commit('100', [{ topic: out('reset'), key: 'k', value: 'r-100' }]);
    await first.committer.close();

    // A reopen without a reset: nothing was replayed.
    const again = await open(groupId, 1);
    expect(again).toMatchObject({ committed: '100', replayedBelow: undefined });
    await again.committer.close();

    // What `kafka-consumer-groups --reset-offsets --to-offset 0` does: the metadata is gone.
    await admin.setOffsets({ groupId, topic: input, partitions: [{ partition: 1, offset: '0' }] });
    expect((await offsetsOf(groupId))[1]?.metadata ?? '').toBe('');
    const rebuilt = await open(groupId, 1);
    expect(rebuilt).toMatchObject({ committed: '0', replayedBelow: '100' });
    // Commits during the rebuild keep the highest offset ever committed.
    await rebuilt.committer.commit('30', []);
    await waitFor('offset 30', async () => (await offsetsOf(groupId))[1]?.offset === '30');
    expect((await offsetsOf(groupId))[1]?.metadata).toBe('rxingest:highest=100');
    await rebuilt.committer.close();
    expect(await open(groupId, 1)).toMatchObject({ committed: '30', replayedBelow: '100' });
  });

  it('builds transactional ids that cannot collide across group and topic names', () => {
    const a = TransactionalCommitter.transactionalId('a-b', 'c', 0);
    const b = TransactionalCommitter.transactionalId('a', 'b-c', 0);
    const c = TransactionalCommitter.transactionalId('a/b', 'c', 0);
    const d = TransactionalCommitter.transactionalId('a', 'b/c', 0);
    expect(new Set([a, b, c, d]).size).toBe(4);
  });
});
