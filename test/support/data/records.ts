import type { GraphSettings } from '../../../src/config/config.js';
import type { RawRecord } from '../../../src/model/message.js';
import { decide, type Entry, type Outcome } from '../../../src/model/outcome.js';
import { parseRecord } from '../../../src/model/parse.js';
import { createRetryPolicy, type RetryPolicy } from '../../../src/retry/retry-policy.js';

export const testSettings = (overrides: Partial<GraphSettings> = {}): GraphSettings => ({
  maxMessageBytes: 1024 * 1024,
  dedupWindowMs: 10_000,
  clientIdleMs: 30_000,
  batchMax: 1000,
  batchMs: 100,
  batchesInFlight: 1,
  batchJoinBytes: 1024 * 1024,
  redisLookupBackoffMs: 1000,
  highWater: 10_000,
  lowWater: 5_000,
  highWaterBytes: 16 * 1024 * 1024,
  intakeSharePartitions: 1,
  commitIntervalMs: 500,
  commitEvery: 5_000,
  retryBaseMs: 10,
  retryMaxMs: 100,
  tombstones: 'dead-letter',
  ...overrides,
});

/** A retry policy without jitter (random = 1): delays are exactly baseMs, 2×baseMs, … up to maxMs. */
export const testRetryPolicy = (
  baseMs = 10,
  maxMs = 100,
  retryable?: (err: unknown) => boolean,
): RetryPolicy => createRetryPolicy({ baseMs, maxMs, random: () => 1, ...(retryable ? { retryable } : {}) });

export const TS = '2026-11-30T12:00:00.000Z';

/** Builds Kafka-like records with increasing offsets for one partition. */
export function recordFactory(topic = 'ingest.events', partition = 0) {
  let offset = 0n;
  const make = (value: unknown, key?: string | Buffer | null): RawRecord => ({
    topic,
    partition,
    offset: String(offset++),
    key: key === undefined || key === null ? null : Buffer.isBuffer(key) ? key : Buffer.from(key),
    value:
      value === null
        ? null
        : Buffer.isBuffer(value)
          ? value
          : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
  });
  return {
    event: (id: string, clientId: string, name = 'login', data: Record<string, unknown> = {}) =>
      make({ id, clientId, type: 'event', name, ts: TS, data }, clientId),
    profile: (id: string, clientId: string, version: number, data: Record<string, unknown>) =>
      make({ id, clientId, type: 'profile', version, ts: TS, data }, clientId),
    /** A record whose value is these bytes or this text, as sent. */
    raw: (value: string | Buffer | null, key?: string | Buffer | null) => make(value, key),
    /** A null value (tombstone) with this key. */
    tombstone: (key: string | Buffer | null) => make(null, key),
    /** The end of a gap of `n` offsets the fetch skipped (markers, aborted records): its last offset. */
    gap: (n = 1): RawRecord => {
      offset += BigInt(n - 1);
      return { topic, partition, offset: String(offset++), key: null, value: null, gap: true };
    },
    skip: (n: number) => {
      offset += BigInt(n);
    },
    /** The next record gets this offset (it must not go back). */
    at: (next: string | number | bigint) => {
      offset = BigInt(next);
    },
  };
}

/** An open entry, as parseRecords would make it from a valid record (throws if it is not one). */
export function openEntry(record: RawRecord, seq = Number(record.offset)): Entry {
  const p = parseRecord(record, 1 << 20);
  if (!p.ok) throw new Error(`not a valid record: ${'reason' in p ? p.reason : 'tombstone'}`);
  return { record, seq, message: p.message };
}

/** An entry decided already (by `outcome`), with its message when the record is valid. */
export function decidedEntry(record: RawRecord, outcome: Outcome, seq = Number(record.offset)): Entry {
  const p = parseRecord(record, 1 << 20);
  return decide(p.ok ? { record, seq, message: p.message } : { record, seq }, outcome);
}

/** A tombstone entry under TOMBSTONES=delete: it deletes `clientId`'s profile. */
export function deleteEntry(record: RawRecord, clientId: string, seq = Number(record.offset)): Entry {
  return { record, seq, deletes: clientId };
}

/** A short, readable label of an entry for marble expectations: `<id or client>:<outcome kind or open>`. */
export function label(e: Entry): string {
  const who = e.message?.id ?? (e.deletes !== undefined ? `del(${e.deletes})` : `@${e.record.offset}`);
  return `${who}:${e.outcome?.kind ?? 'open'}`;
}
