import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { OutRecord } from '../../../../src/model/out-record.js';
import {
  BATCH_OVERHEAD,
  batchedSize,
  fitRecord,
  fitRecords,
  KEY_TRUNCATED,
  requestsOf,
  roomIn,
  TRUNCATED_BYTES,
  VALUE_TRUNCATED,
} from '../../../../src/sinks/kafka/record-limits.js';
import { deadLetterOf } from '../../../../src/tools/dlq/dead-letter.js';
import { prng } from '../../../support/data/random.js';

/**
 * The sizing that keeps a too-large record out of a commit's transaction. The estimate is
 * checked against the record batch kafkajs itself encodes (what the broker measures against
 * max.message.bytes): never below it.
 */
const require = createRequire(import.meta.url);
const Long = require('kafkajs/src/utils/long') as { fromValue(v: string | number): unknown };
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
  RecordBatch: (o: object) => Promise<{ buffer: Buffer }>;
};
const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (o: object) => unknown;

/** The bytes of the transactional batch kafkajs builds for these records (as the broker sizes it). */
async function encodedBatch(records: readonly OutRecord[]): Promise<number> {
  const now = Date.now();
  const encoded = await RecordBatch({
    firstOffset: Long.fromValue('0'),
    firstTimestamp: now,
    maxTimestamp: now,
    lastOffsetDelta: records.length - 1,
    transactional: true,
    producerId: Long.fromValue('123456789012'),
    producerEpoch: 3,
    firstSequence: 1_000_000,
    records: records.map((r, i) =>
      Record({
        offsetDelta: i,
        // A batch spanning a long time: the timestamp delta's varlong at its widest seen.
        timestampDelta: Long.fromValue(i * 3_600_000),
        key: r.key === null ? null : Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        headers: r.headers ?? {},
      }),
    ),
  });
  return encoded.buffer.length;
}

const deadLetter = (valueBytes: number, extra: Partial<OutRecord> = {}): OutRecord => ({
  topic: 'dlq',
  key: 'client-7',
  value: Buffer.alloc(valueBytes, 0x61),
  headers: {
    'x-error-class': 'too-large',
    'x-error-message': 'value is 2097152 bytes, over MAX_MESSAGE_BYTES=1048576',
    'x-source-topic': 'in',
    'x-source-partition': '3',
    'x-source-offset': '123456',
  },
  ...extra,
});

describe('batchedSize', () => {
  it('is never below what kafkajs encodes, for keys, values and headers of any size (UTF-8 counted in bytes)', async () => {
    const rnd = prng(7);
    for (let round = 0; round < 40; round++) {
      const records: OutRecord[] = [];
      const n = 1 + Math.floor(rnd() * 20);
      for (let i = 0; i < n; i++) {
        const len = Math.floor(rnd() * (round % 4 === 0 ? 300_000 : 3_000));
        records.push({
          topic: 't',
          key: rnd() < 0.2 ? null : 'ключ-'.repeat(Math.floor(rnd() * 50)),
          value: rnd() < 0.1 ? null : rnd() < 0.5 ? 'é'.repeat(len) : Buffer.alloc(len, 1),
          headers: Object.fromEntries(
            Array.from({ length: Math.floor(rnd() * 6) }, (_, h) => [`x-h-${h}`, '€'.repeat(h * 40)]),
          ),
        });
      }
      const estimate = BATCH_OVERHEAD + records.reduce((a, r) => a + batchedSize(r), 0);
      const actual = await encodedBatch(records);
      expect(estimate).toBeGreaterThanOrEqual(actual);
      // Conservative, not absurd: the varints' widest forms at most, per record and header.
      const headers = records.reduce((a, r) => a + Object.keys(r.headers ?? {}).length, 0);
      expect(estimate - actual).toBeLessThanOrEqual(36 * n + 10 * headers);
    }
  });
});

describe('fitRecord', () => {
  it('leaves a record that fits unchanged (the same object)', () => {
    const r = deadLetter(1000);
    expect(fitRecord(r, 64 * 1024)).toBe(r);
  });

  it('truncates a 2 MB dead letter for a 1 MiB topic to its first 64 KiB, keeping reason and origin, saying so', async () => {
    const r = deadLetter(2 * 1024 * 1024);
    const f = fitRecord(r, 1_048_588);
    expect(f.key).toBe('client-7');
    expect((f.value as Buffer).length).toBe(TRUNCATED_BYTES);
    expect(f.headers).toEqual({
      ...r.headers,
      [VALUE_TRUNCATED]: `${2 * 1024 * 1024} bytes, first ${TRUNCATED_BYTES} kept`,
    });
    expect(await encodedBatch([f])).toBeLessThanOrEqual(1_048_588);
  });

  it('keeps fewer bytes when the topic takes less than 64 KiB, and the batch fits', async () => {
    for (const limit of [4_000, 16 * 1024, 64 * 1024, 65_000]) {
      const r = deadLetter(2 * 1024 * 1024);
      const f = fitRecord(r, limit);
      const kept = (f.value as Buffer).length;
      expect(kept).toBeLessThan(TRUNCATED_BYTES);
      expect(kept).toBeGreaterThan(limit - 3_000);
      expect(f.headers?.[VALUE_TRUNCATED]).toBe(`${2 * 1024 * 1024} bytes, first ${kept} kept`);
      expect((f.value as Buffer).equals((r.value as Buffer).subarray(0, kept))).toBe(true);
      expect(await encodedBatch([f])).toBeLessThanOrEqual(limit);
    }
  });

  it('cuts a string value by bytes and a key too large for the topic by itself, saying so', async () => {
    const s = fitRecord(deadLetter(0, { value: 'ü'.repeat(100_000) }), 32 * 1024);
    expect(s.headers?.[VALUE_TRUNCATED]).toMatch(/^200000 bytes, first \d+ kept$/);
    expect(await encodedBatch([s])).toBeLessThanOrEqual(32 * 1024);

    const k = fitRecord(deadLetter(10, { key: Buffer.alloc(100_000, 0x6b) }), 32 * 1024);
    expect(k.headers?.[VALUE_TRUNCATED]).toBe('10 bytes, first 0 kept');
    expect(k.headers?.[KEY_TRUNCATED]).toMatch(/^100000 bytes, first \d+ kept$/);
    expect((k.key as Buffer).length).toBeGreaterThan(20_000);
    expect(await encodedBatch([k])).toBeLessThanOrEqual(32 * 1024);

    const tombstone = fitRecord(deadLetter(0, { value: null, key: 'k'.repeat(50_000) }), 16 * 1024);
    expect(tombstone.value).toBeNull();
    expect(tombstone.headers?.[VALUE_TRUNCATED]).toBeUndefined();
    expect(await encodedBatch([tombstone])).toBeLessThanOrEqual(16 * 1024);
  });
});

describe('a fitted dead letter as `rxingest dlq` reads it', () => {
  const asFetched = (r: OutRecord) =>
    deadLetterOf('dlq', {
      topic: 'dlq',
      partition: 1,
      offset: '9',
      key: r.key === null ? null : Buffer.from(r.key),
      value: r.value === null ? null : Buffer.from(r.value),
      headers: r.headers ?? {},
      timestamp: 1_000,
    });

  it('says truncated, with the original size, class, reason and origin (the contract format)', () => {
    const d = asFetched(fitRecord(deadLetter(2 * 1024 * 1024), 64 * 1024));
    expect(d).toMatchObject({
      truncated: true,
      originalSize: 2 * 1024 * 1024,
      cls: 'too-large',
      message: 'value is 2097152 bytes, over MAX_MESSAGE_BYTES=1048576',
      source: { topic: 'in', partition: 3, offset: '123456' },
    });
    expect(asFetched(fitRecord(deadLetter(10, { key: 'k'.repeat(100_000) }), 16 * 1024)).truncated).toBe(
      true,
    );
    expect(asFetched(deadLetter(10)).truncated).toBe(false);
  });
});

describe('fitRecords', () => {
  it('fits each record to its own topic, counts the cut ones, and returns the same array when none is cut', () => {
    const records = [
      { topic: 'triggers', key: 'c', value: '{"id":"1"}' },
      deadLetter(100_000),
      deadLetter(10),
    ];
    const limits = (t: string) => (t === 'dlq' ? 64 * 1024 : 1_048_588);
    const fitted = fitRecords(records, limits);
    expect(fitted.truncated).toBe(1);
    expect(fitted.records[0]).toBe(records[0]);
    expect(fitted.records[2]).toBe(records[2]);
    expect(fitted.records[1]?.headers?.[VALUE_TRUNCATED]).toBeDefined();
    const none = fitRecords([records[0]!, records[2]!], limits);
    expect(none.truncated).toBe(0);
  });
});

describe('requestsOf', () => {
  const limits = (t: string) => (t === 'dlq' ? 64 * 1024 : 1_048_588);

  it('keeps every topic of a request within its limit, in order, with whole records', async () => {
    const records: OutRecord[] = [];
    for (let i = 0; i < 30; i++) {
      records.push({ topic: 'triggers', key: `c-${i}`, value: `{"id":"${i}"}` });
      records.push(fitRecord(deadLetter(10_000 + i * 1_000), limits('dlq')));
    }
    const requests = [...requestsOf(records, limits)];
    expect(requests.flat()).toEqual(records);
    expect(requests.length).toBeGreaterThan(1);
    for (const request of requests) {
      for (const topic of ['dlq', 'triggers']) {
        const share = request.filter((r) => r.topic === topic);
        if (share.length > 0) expect(await encodedBatch(share)).toBeLessThanOrEqual(limits(topic));
      }
    }
  });

  it('bounds a request by bytes over all topics, and sends a record alone when it fits nothing else', () => {
    const wide = () => 16 * 1024 * 1024;
    const big = (topic: string): OutRecord => ({ topic, key: null, value: Buffer.alloc(200 * 1024) });
    const requests = [...requestsOf([big('a'), big('b'), big('c'), big('d')], wide, 512 * 1024)];
    expect(requests.map((r) => r.map((x) => x.topic))).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    const huge = [...requestsOf([big('a'), { ...big('a'), value: Buffer.alloc(600_000) }], wide, 512 * 1024)];
    expect(huge.map((r) => r.length)).toEqual([1, 1]);
    expect(roomIn(64 * 1024)).toBeLessThan(64 * 1024 - BATCH_OVERHEAD);
  });
});
