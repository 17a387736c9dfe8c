import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { prng } from '../../support/data/random.js';

/**
 * The decoding patch (patches/kafkajs+2.2.4.patch: offsets and timestamps in Numbers while
 * exact, records decoded in place, the fetched-offset filter in Numbers) is only for speed:
 * every record must come out exactly as kafkajs 2.2.4 published decodes it, whatever the
 * offsets, timestamps, headers and compression. Batches are made by kafkajs's own encoder.
 */
const require = createRequire(import.meta.url);

interface DecodedRecord {
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, unknown>;
  readonly [field: string]: unknown;
}
type Decoder = { offset: number; buffer: Buffer };
type DecoderClass = new (
  buffer: Buffer,
) => Decoder & {
  readInt32(): number;
  readArray<T>(f: (d: Decoder) => T): T[];
};

const Long = require('kafkajs/src/utils/long') as { fromValue(v: string | number): unknown };
const KafkaDecoder = require('kafkajs/src/protocol/decoder') as DecoderClass;
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
  RecordBatch: (o: object) => Promise<{ buffer: Buffer }>;
};
const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (o: object) => unknown;
const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (
  d: Decoder,
) => Promise<{ records: DecodedRecord[] } & Record<string, unknown>>;
const { Types: Compression } = require('kafkajs/src/protocol/message/compression') as {
  Types: { None: number; GZIP: number };
};
const installedRecordDecoder = require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as (
  d: Decoder,
  ctx: object,
) => DecodedRecord;
const Batch = require('kafkajs/src/consumer/batch.js') as new (
  topic: string,
  fetchedOffset: string,
  partitionData: object,
) => { messagesWithinOffset: DecodedRecord[] };
const original = require('../../../harness/kafkajs-2.2.4/record-decode.original.cjs') as {
  RecordDecoder(d: Decoder, ctx: object): DecodedRecord;
  decodeRecords(d: Decoder, ctx: object): DecodedRecord[];
  withinOffset(messages: DecodedRecord[], fetchedOffset: string): DecodedRecord[];
};

interface BatchSpec {
  readonly firstOffset: string;
  readonly firstTimestamp: number | string;
  readonly compression?: number;
  readonly records: {
    offsetDelta: number;
    timestampDelta: number | unknown;
    key: Buffer | null;
    value: Buffer | null;
    headers?: Record<string, unknown>;
  }[];
}

async function encode(spec: BatchSpec): Promise<Buffer> {
  const encoded = await RecordBatch({
    compression: spec.compression ?? Compression.None,
    firstOffset: Long.fromValue(spec.firstOffset),
    firstTimestamp: spec.firstTimestamp,
    maxTimestamp: spec.firstTimestamp,
    lastOffsetDelta: spec.records.at(-1)?.offsetDelta ?? 0,
    records: spec.records.map((r) => Record(r)),
  });
  return encoded.buffer;
}

/** The records as the installed (patched) kafkajs decodes them. */
async function installed(buffer: Buffer): Promise<DecodedRecord[]> {
  return (await decodeBatch(new KafkaDecoder(buffer))).records;
}

/**
 * The records as kafkajs 2.2.4 decoded them: the batch's header read by the installed decoder
 * (unchanged by the patch), the records by the original code from the same context.
 */
async function published(buffer: Buffer): Promise<DecodedRecord[]> {
  const batch = await decodeBatch(new KafkaDecoder(buffer));
  const ctx = { ...batch, records: undefined, magicByte: 2 };
  delete (ctx as { records?: unknown }).records;
  // The records start after the batch header: 8 (offset) 4 (length) 4 (epoch) 1 (magic) 4 (crc)
  // 2 (attributes) 4 (last delta) 8 8 8 (timestamps, producer) 2 (epoch) 4 (sequence).
  const decoder = new KafkaDecoder(buffer);
  decoder.offset = 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4;
  return original.decodeRecords(decoder, ctx);
}

/** What a consumer would see: every field but the shared batch context. */
const fields = (records: readonly DecodedRecord[]) =>
  records.map(({ batchContext: _, ...rest }) => ({ ...rest, headers: { ...rest.headers } }));

const buf = (s: string) => Buffer.from(s);

describe('kafkajs record decoding patch', () => {
  it('decodes offsets and timestamps as the published decoder, at the edges of exact Numbers', async () => {
    const cases: BatchSpec[] = [
      { firstOffset: '0', firstTimestamp: 1_796_000_000_000, records: [] },
      { firstOffset: '41', firstTimestamp: 1_796_000_000_000, records: [] },
      // 2^53 - 2 plus deltas crosses the last exact Number.
      { firstOffset: '9007199254740990', firstTimestamp: 1, records: [] },
      { firstOffset: '9223372036854775000', firstTimestamp: '9223372036854775000', records: [] },
      // No timestamp (-1), and timestamps before the epoch.
      { firstOffset: '7', firstTimestamp: -1, records: [] },
    ];
    const deltas = [0, 1, -1, 63, -64, 64, 8191, -8192, 2 ** 31, -(2 ** 40), 2 ** 48 - 1, -(2 ** 48)];
    for (const c of cases)
      for (let i = 0; i < deltas.length; i++)
        c.records.push({
          offsetDelta: i * 3,
          timestampDelta: deltas[i],
          key: buf(`k${i}`),
          value: buf(`v${i}`),
        });
    // Deltas that need more than 7 bytes (beyond 2^48 each way) take the Long path.
    cases.push({
      firstOffset: '100',
      firstTimestamp: 5,
      records: [
        { offsetDelta: 0, timestampDelta: Long.fromValue('281474976710656'), key: null, value: buf('a') },
        {
          offsetDelta: 1,
          timestampDelta: Long.fromValue('-4611686018427387904'),
          key: null,
          value: buf('b'),
        },
        { offsetDelta: 2, timestampDelta: Long.fromValue('4611686018427387903'), key: null, value: buf('c') },
      ],
    });
    for (const c of cases) {
      const buffer = await encode(c);
      const want = await published(buffer);
      expect(want).toHaveLength(c.records.length);
      expect(fields(await installed(buffer))).toEqual(fields(want));
    }
  });

  it('builds the same headers: repeated keys in arrays, keys of Object.prototype, __proto__', async () => {
    const spec: BatchSpec = {
      firstOffset: '10',
      firstTimestamp: 1_796_000_000_000,
      records: [
        { offsetDelta: 0, timestampDelta: 0, key: buf('a'), value: buf('x'), headers: {} },
        {
          offsetDelta: 1,
          timestampDelta: 2,
          key: buf('b'),
          value: null,
          headers: { 'x-origin': buf('o'), trace: [buf('1'), buf('2'), buf('3')] },
        },
        {
          offsetDelta: 2,
          timestampDelta: 3,
          key: null,
          value: buf('y'),
          headers: { constructor: buf('c'), toString: [buf('t1'), buf('t2')], ['__proto__']: buf('p') },
        },
      ],
    };
    // A __proto__ header written as an own key, as a hostile producer could.
    Object.defineProperty(spec.records[2]!.headers!, '__proto__', {
      value: [buf('p1'), buf('p2')],
      enumerable: true,
    });
    const buffer = await encode(spec);
    const want = await published(buffer);
    const got = await installed(buffer);
    expect(fields(got)).toEqual(fields(want));
    for (let i = 0; i < got.length; i++) {
      expect(Object.getPrototypeOf(got[i]!.headers)).toBe(Object.getPrototypeOf(want[i]!.headers));
      expect(Object.keys(got[i]!.headers)).toEqual(Object.keys(want[i]!.headers));
      expect(Object.getOwnPropertyDescriptor(got[i]!.headers, '__proto__')?.value).toEqual(
        Object.getOwnPropertyDescriptor(want[i]!.headers, '__proto__')?.value,
      );
    }
  });

  it('decodes random compressed and uncompressed batches as the published decoder', async () => {
    const random = prng(11);
    for (let b = 0; b < 60; b++) {
      const n = 1 + Math.floor(random() * 40);
      const firstOffset = String(Math.floor(random() * 2 ** 53));
      const records = Array.from({ length: n }, (_, i) => ({
        offsetDelta: i + Math.floor(random() * 3),
        timestampDelta: Math.floor((random() - 0.3) * 10 ** Math.floor(random() * 12)),
        key: random() < 0.2 ? null : buf(`client-${Math.floor(random() * 1e6)}`),
        value:
          random() < 0.05 ? null : buf(JSON.stringify({ n: i, s: 'é'.repeat(Math.floor(random() * 50)) })),
        headers:
          random() < 0.5
            ? {}
            : { 'x-h': buf(String(i)), ...(random() < 0.3 ? { r: [buf('1'), buf('2')] } : {}) },
      }));
      const spec = {
        firstOffset,
        firstTimestamp: 1_700_000_000_000 + Math.floor(random() * 1e11),
        compression: b % 3 === 0 ? Compression.GZIP : Compression.None,
        records,
      };
      const buffer = await encode(spec);
      const got = await installed(buffer);
      expect(got.map((r) => r.offset)).toEqual(
        records.map((r) => String(BigInt(firstOffset) + BigInt(r.offsetDelta))),
      );
      if (spec.compression === Compression.None) expect(fields(got)).toEqual(fields(await published(buffer)));
      else
        expect(got.map((r) => r.timestamp)).toEqual(
          records.map((r) => String(BigInt(spec.firstTimestamp) + BigInt(r.timestampDelta))),
        );
    }
  });

  it('a record whose length runs past the batch is read as the published decoder reads it', async () => {
    const buffer = await encode({
      firstOffset: '3',
      firstTimestamp: 10,
      records: [{ offsetDelta: 0, timestampDelta: 1, key: buf('k'), value: buf('v') }],
    });
    // The record's length varint follows the batch header (57) and the records' count (4):
    // say 30 bytes (zigzag 60) where the batch holds about ten.
    const at = 57 + 4;
    expect(buffer[at]! / 2).toBeLessThan(30);
    buffer[at] = 60;
    expect(fields(await installed(buffer))).toEqual(fields(await published(buffer)));
  });

  it('the record decoder alone, with no batch context, fails as the published one does', async () => {
    const buffer = await encode({
      firstOffset: '0',
      firstTimestamp: 0,
      records: [{ offsetDelta: 5, timestampDelta: 9, key: buf('k'), value: buf('v') }],
    });
    // Past the batch header and the records' count, then the record's length varint.
    const start = 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4 + 1;
    const attempt = (decode: (d: Decoder, ctx: object) => unknown) => {
      const d = new KafkaDecoder(buffer);
      d.offset = start;
      try {
        decode(d, {});
        return 'decoded';
      } catch (err) {
        return (err as Error).constructor.name;
      }
    };
    expect(attempt(installedRecordDecoder)).toBe(attempt(original.RecordDecoder));
    expect(attempt(installedRecordDecoder)).toBe('TypeError');
  });

  it('drops the records before the fetched offset as the published Batch did, large offsets too', () => {
    for (const fetched of ['0', '5', '9007199254740991', '9007199254740993', '9223372036854775806']) {
      const base = BigInt(fetched);
      const messages = [-3n, -1n, 0n, 1n, 2n].map((d) => ({
        offset: String(base + d),
        isControlRecord: false,
      }));
      const within = new Batch('t', fetched, { partition: 0, highWatermark: '0', messages })
        .messagesWithinOffset;
      expect(within.map((m) => m.offset)).toEqual(
        original.withinOffset(messages as never, fetched).map((m) => m.offset),
      );
    }
  });
});
