import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  type AbortedMessagesFilter,
  assertKafkajsReadCommitted,
  type FetchedMessage,
  filtersAbortedTransactions,
  installedAbortedMessagesFilter,
} from '../../../src/kafkajs-patch/read-committed.js';
import { prng } from '../../support/data/random.js';
import { transactionLog } from '../../support/kafka/transaction-log.js';

const require = createRequire(import.meta.url);
const original =
  require('../../../harness/kafkajs-2.2.4/filter-aborted-messages.original.cjs') as AbortedMessagesFilter;
const installed = installedAbortedMessagesFilter();
/** kafkajs's Batch: what eachBatch hands over (filter, then control records dropped). */
const Batch = require('kafkajs/src/consumer/batch.js') as new (
  topic: string,
  fetchedOffset: string,
  partitionData: object,
) => { messages: FetchedMessage[] };

const values = (ms: readonly FetchedMessage[]) =>
  ms.filter((m) => !m.isControlRecord).map((m) => m.value!.toString());

/** Runs `filter` over fetches from every offset of random logs; returns the records it let through wrongly. */
function leaks(filter: AbortedMessagesFilter, seeds: number) {
  const wrong: string[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    const log = transactionLog(prng(seed), { producers: 4, steps: 120 });
    for (let from = 0; from < log.records.length; from += 7) {
      const expected = log.records
        .slice(from)
        .filter((r) => r.committed)
        .map((r) => r.message.value!.toString());
      const got = values(filter(log.fetch(from)));
      if (got.join() !== expected.join()) {
        const extra = got.filter((v) => !expected.includes(v));
        const missing = expected.filter((v) => !got.includes(v));
        wrong.push(`seed ${seed} from ${from}: extra ${extra.join(' ')}; missing ${missing.join(' ')}`);
      }
    }
  }
  return wrong;
}

describe('kafkajs read_committed filter (patches/kafkajs+2.2.4.patch)', () => {
  it('the installed kafkajs is the patched one, and Batch uses it', () => {
    expect(installed).not.toBe(original);
    expect(filtersAbortedTransactions(installed)).toBe(true);
    expect(() => assertKafkajsReadCommitted()).not.toThrow();
    const log = transactionLog(prng(7));
    const batch = new Batch('t', '0', {
      partition: 0,
      highWatermark: String(log.records.length),
      ...log.fetch(0),
    });
    expect(values(batch.messages)).toEqual(
      log.records.filter((r) => r.committed).map((r) => r.message.value!.toString()),
    );
  });

  it('the original 2.2.4 filter lets aborted records through on the probe (the guard would refuse it)', () => {
    expect(filtersAbortedTransactions(original)).toBe(false);
  });

  it('keeps exactly the committed records of interleaved producers, from any fetch offset (200 random logs)', () => {
    expect(leaks(installed, 200)).toEqual([]);
  });

  it('the original 2.2.4 filter fails the same logs', () => {
    expect(leaks(original, 200).length).toBeGreaterThan(50);
  });

  it('opens every aborted transaction that began before the fetch, not one per record', () => {
    // Producers 1, 2 and 3 each have an aborted transaction open when the fetch starts at 10.
    const rec = (offset: number, producerId: string, v: string): FetchedMessage => ({
      offset: String(offset),
      key: null,
      value: Buffer.from(v),
      isControlRecord: false,
      batchContext: { producerId, inTransaction: true },
    });
    const fetch = {
      messages: [rec(10, '3', 'a3'), rec(11, '3', 'a3b'), rec(12, '2', 'a2'), rec(13, '9', 'kept')],
      abortedTransactions: [
        { producerId: '1', firstOffset: '3' },
        { producerId: '2', firstOffset: '4' },
        { producerId: '3', firstOffset: '5' },
      ],
    };
    expect(values(installed(fetch))).toEqual(['kept']);
    // One transaction per record: producer 3's records pass until its transaction is "reached".
    expect(values(original(fetch))).toEqual(['a3', 'a3b', 'kept']);
  });

  it('takes only a control record for an abort marker, not a data record keyed 0,0,0,0', () => {
    const fetch = {
      messages: [
        {
          offset: '0',
          key: null,
          value: Buffer.from('a'),
          isControlRecord: false,
          batchContext: { producerId: '1', inTransaction: true },
        },
        {
          offset: '1',
          key: Buffer.from([0, 0, 0, 0]),
          value: Buffer.from('b'),
          isControlRecord: false,
          batchContext: { producerId: '1', inTransaction: true },
        },
        {
          offset: '2',
          key: null,
          value: Buffer.from('c'),
          isControlRecord: false,
          batchContext: { producerId: '1', inTransaction: true },
        },
        {
          offset: '3',
          key: Buffer.from([0, 0, 0, 0]),
          value: Buffer.alloc(6),
          isControlRecord: true,
          batchContext: { producerId: '1', inTransaction: true },
        },
        {
          offset: '4',
          key: null,
          value: Buffer.from('d'),
          isControlRecord: false,
          batchContext: { producerId: '1', inTransaction: false },
        },
      ],
      abortedTransactions: [{ producerId: '1', firstOffset: '0' }],
    };
    expect(values(installed(fetch))).toEqual(['d']);
    expect(values(original(fetch))).toEqual(['b', 'c', 'd']);
  });
});
