import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import type { Producer, Transaction } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, readCommitted, stackEnv, uniqueName } from '../../../harness/stack.js';
import { assertKafkajsReadCommitted } from '../../../src/kafkajs-patch/read-committed.js';
import { readTopics, wholeTopics } from '../../../src/tools/topic-reader.js';
import { prng } from '../../support/data/random.js';

const run = promisify(execFile);
const PARTITIONS = 3;

/**
 * read_committed with kafkajs, proved against the real broker and kcat: several transactional
 * producers interleave into the same partitions, committing and aborting, and one producer
 * process is SIGKILLed inside a transaction and fenced by its successor (same transactional
 * id). The project's reader (patched kafkajs) and kcat must both see exactly the committed
 * records; kafkajs with its original filter must not.
 */
describe('kafkajs read_committed (patched) against the real broker', () => {
  const kafka = kafkaClient('read-committed-test');
  const topic = `${uniqueName('read-committed')}.in`;
  const committed = new Set<string>();
  const aborted = new Set<string>();
  const killed: string[] = [];
  const producers: Producer[] = [];

  beforeAll(async () => {
    assertKafkajsReadCommitted();
    await createTopics([{ topic, numPartitions: PARTITIONS }]);
    const random = prng(20261130);
    let n = 0;
    const nextId = (who: string) => `${who}-${n++}`;

    const plain = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await plain.connect();
    producers.push(plain);
    const txProducers: Producer[] = [];
    for (let i = 0; i < 4; i++) {
      const p = kafka.producer({
        transactionalId: `${topic}-tx-${i}`,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await p.connect();
      producers.push(p);
      txProducers.push(p);
    }
    const open = new Map<number, { txn: Transaction; ids: string[] }>();
    const send = async (i: number, partition = Math.floor(random() * PARTITIONS)) => {
      const t = open.get(i)!;
      const id = nextId(`tx${i}`);
      await t.txn.send({ topic, messages: [{ partition, key: id, value: JSON.stringify({ id }) }] });
      t.ids.push(id);
    };
    const begin = async (i: number, partition?: number) => {
      open.set(i, { txn: await txProducers[i]!.transaction(), ids: [] });
      await send(i, partition);
    };
    const end = async (i: number, commit: boolean) => {
      const t = open.get(i)!;
      open.delete(i);
      if (commit) await t.txn.commit();
      else await t.txn.abort();
      for (const id of t.ids) (commit ? committed : aborted).add(id);
    };
    const step = async () => {
      const i = Math.floor(random() * 5);
      if (i === 4) {
        const id = nextId('plain');
        await plain.send({
          topic,
          messages: [
            { partition: Math.floor(random() * PARTITIONS), key: id, value: JSON.stringify({ id }) },
          ],
        });
        committed.add(id);
      } else if (!open.has(i)) await begin(i);
      else if (random() < 0.6) await send(i);
      else await end(i, random() >= 0.4);
    };

    // Transaction 0 begins before 1 and ends after it: the broker lists 1's abort first.
    await begin(0, 0);
    await begin(1, 0);
    await end(1, false);
    await send(0, 0);
    await end(0, false);

    for (let s = 0; s < 80; s++) await step();

    // A producer process killed inside a transaction, among the others' open transactions.
    const zombieId = `${topic}-zombie`;
    const zombieRecords = Array.from({ length: 9 }, (_, k) => ({
      partition: k % PARTITIONS,
      id: nextId('zombie'),
    }));
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/support/kafka/transaction-child.ts',
        stackEnv.kafkaBrokers,
        zombieId,
        topic,
        JSON.stringify(zombieRecords),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((r) => child.on('exit', (code, signal) => r(signal ?? code)));
    for await (const line of createInterface({ input: child.stdout! })) if (line === 'sent') break;
    for (let s = 0; s < 30; s++) await step();
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    killed.push(...zombieRecords.map((r) => r.id));
    for (let s = 0; s < 30; s++) await step();

    // Its successor: the first transaction fences the zombie and aborts its open transaction.
    const successor = kafka.producer({ transactionalId: zombieId, idempotent: true, maxInFlightRequests: 1 });
    await successor.connect();
    producers.push(successor);
    const txn = await successor.transaction();
    const successorIds = Array.from({ length: 3 }, (_, k) => ({ partition: k, id: nextId('successor') }));
    for (const r of successorIds) {
      await txn.send({
        topic,
        messages: [{ partition: r.partition, key: r.id, value: JSON.stringify({ id: r.id }) }],
      });
    }
    await txn.commit();
    for (const r of successorIds) committed.add(r.id);
    for (const id of killed) aborted.add(id);

    for (let s = 0; s < 80; s++) await step();
    for (const i of [...open.keys()]) await end(i, random() >= 0.4);
  });

  afterAll(async () => {
    await Promise.all(producers.map((p) => p.disconnect()));
  });

  it('the log really interleaves committed and aborted transactions of several producers', () => {
    expect(committed.size).toBeGreaterThan(100);
    expect(aborted.size).toBeGreaterThan(30);
    expect(killed.every((id) => aborted.has(id))).toBe(true);
  });

  it('kcat (librdkafka, read_committed) sees exactly the committed records', async () => {
    const ids = (await readCommitted(topic)).map((r) => JSON.parse(String(r.value)).id as string);
    expect(ids.length).toBe(committed.size);
    expect(new Set(ids)).toEqual(committed);
  });

  it("the tools' kafkajs reader (patched) sees exactly the committed records, each once", async () => {
    const admin = kafka.admin();
    await admin.connect();
    const ranges = await wholeTopics(admin, [topic]);
    await admin.disconnect();
    const ids: string[] = [];
    await readTopics(kafka, ranges, (rs) => {
      for (const r of rs) ids.push(JSON.parse(String(r.value)).id as string);
    });
    expect(ids.length).toBe(committed.size);
    expect(new Set(ids)).toEqual(committed);
  });

  it('kafkajs with its original 2.2.4 filter lets records of the aborted transactions through', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', 'test/support/kafka/read-with-original-filter.ts', stackEnv.kafkaBrokers, topic],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const ids = JSON.parse(stdout) as string[];
    const leaked = ids.filter((id) => !committed.has(id));
    expect(leaked.length).toBeGreaterThan(0);
    expect(leaked.every((id) => aborted.has(id))).toBe(true);
    // It still sees every committed record: the difference is exactly the leak.
    expect(new Set(ids.filter((id) => committed.has(id)))).toEqual(committed);
  });
});
