import type { OutRecord } from '../../model/out-record.js';

/**
 * How big a record is in the record batch the broker measures against a topic's
 * `max.message.bytes`, and what to do so that a commit's records always fit: truncate the
 * one that is too large by itself, and split the commit into requests where no topic's
 * share could form a batch over its limit. Every figure errs on the large side: a record
 * wrongly thought to fit would be refused inside a transaction, which is then aborted, and
 * readers at read_uncommitted see that aborted transaction's other records.
 */

/** A record batch's header (magic 2): offsets, lengths, CRC, attributes, timestamps, producer id, epoch, sequence, count. */
export const BATCH_OVERHEAD = 61;
/**
 * A record's own fields at their widest: length, attributes, timestamp delta (varlong),
 * offset delta, key length, value length, header count.
 */
const RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 5 + 5;
/** Each header's key length and value length (varints). */
const HEADER_OVERHEAD = 5 + 5;
/** Left free below every limit, for what the estimate above does not know of. */
export const LIMIT_MARGIN = 1024;
/** A truncated value keeps at most this many of its first bytes (less when the topic takes less). */
export const TRUNCATED_BYTES = 64 * 1024;
/** A commit's records go in requests of about this many bytes at most. */
export const REQUEST_BYTES = 512 * 1024;

export const VALUE_TRUNCATED = 'x-value-truncated';
export const KEY_TRUNCATED = 'x-key-truncated';

const byteLength = (x: Buffer | string | null): number =>
  x === null ? 0 : typeof x === 'string' ? Buffer.byteLength(x) : x.length;

const headersBytes = (headers: Readonly<Record<string, string>> | undefined): number => {
  let n = 0;
  for (const k in headers) n += HEADER_OVERHEAD + Buffer.byteLength(k) + Buffer.byteLength(headers[k]!);
  return n;
};

/** The bytes a record takes in a record batch, at most. */
export function batchedSize(r: OutRecord): number {
  return RECORD_OVERHEAD + byteLength(r.key) + byteLength(r.value) + headersBytes(r.headers);
}

/** The most a single record may take so that its batch, alone, stays within `limit`. */
export const roomIn = (limit: number): number => limit - BATCH_OVERHEAD - LIMIT_MARGIN;

const asBuffer = (x: Buffer | string): Buffer => (typeof x === 'string' ? Buffer.from(x) : x);

/** The dead-letter format's note on a cut field: `<n> bytes, first <k> kept`. */
export const truncationNote = (size: number, kept: number): string => `${size} bytes, first ${kept} kept`;

/**
 * The record as it can go to a topic that takes batches of `limit` bytes: unchanged when it
 * fits; otherwise its value cut to its first bytes (at most TRUNCATED_BYTES), saying so in
 * `x-value-truncated`, and when even the key and headers alone do not fit, its key cut too
 * (`x-key-truncated`). Every other header (the reason, the x-source-* origin) is kept, so
 * the original can be found. A limit too small for the headers alone leaves the record as
 * cut as it can be; the broker refuses it and the commit fails, loudly.
 */
export function fitRecord(r: OutRecord, limit: number): OutRecord {
  const room = roomIn(limit);
  if (batchedSize(r) <= room) return r;
  const valueSize = byteLength(r.value);
  const keySize = byteLength(r.key);
  // The notes are sized with the widest numbers they can hold ("kept" at most the size).
  const headers: Record<string, string> = { ...r.headers };
  if (r.value !== null) headers[VALUE_TRUNCATED] = truncationNote(valueSize, valueSize);
  const withKey = { ...headers, [KEY_TRUNCATED]: truncationNote(keySize, keySize) };
  const fixed = RECORD_OVERHEAD + headersBytes(headers);
  let keptKey = keySize;
  let keptValue = Math.max(0, Math.min(valueSize, TRUNCATED_BYTES, room - fixed - keySize));
  if (fixed + keySize > room) {
    keptValue = 0;
    keptKey = Math.max(0, Math.min(keySize, room - RECORD_OVERHEAD - headersBytes(withKey)));
  }
  const out: Record<string, string> = { ...r.headers };
  if (r.value !== null) out[VALUE_TRUNCATED] = truncationNote(valueSize, keptValue);
  if (keptKey < keySize) out[KEY_TRUNCATED] = truncationNote(keySize, keptKey);
  return {
    ...r,
    key: r.key === null || keptKey === keySize ? r.key : asBuffer(r.key).subarray(0, keptKey),
    value: r.value === null ? null : asBuffer(r.value).subarray(0, keptValue),
    headers: out,
  };
}

/**
 * The records fitted to their topics' limits (see fitRecord), and how many were cut. The
 * same array when none was.
 */
export function fitRecords(
  records: readonly OutRecord[],
  limitOf: (topic: string) => number,
): { readonly records: readonly OutRecord[]; readonly truncated: number } {
  let out: OutRecord[] | undefined;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const fitted = fitRecord(r, limitOf(r.topic));
    if (fitted !== r) {
      out ??= records.slice();
      out[i] = fitted;
    }
  }
  return out === undefined
    ? { records, truncated: 0 }
    : { records: out, truncated: out.filter((r, i) => r !== records[i]).length };
}

/**
 * Splits records, in order, into requests of at most `requestBytes`, where the records of
 * any one topic stay within that topic's limit: kafkajs puts one partition's records of a
 * request into one record batch, and the partitioner may put all of a topic's records on
 * one partition. A record that does not fit any request goes alone.
 */
export function* requestsOf(
  records: readonly OutRecord[],
  limitOf: (topic: string) => number,
  requestBytes = REQUEST_BYTES,
): Generator<OutRecord[]> {
  let chunk: OutRecord[] = [];
  let bytes = 0;
  const perTopic = new Map<string, number>();
  for (const r of records) {
    const size = batchedSize(r);
    const topicBytes = perTopic.get(r.topic) ?? 0;
    if (chunk.length > 0 && (bytes + size > requestBytes || topicBytes + size > roomIn(limitOf(r.topic)))) {
      yield chunk;
      chunk = [];
      bytes = 0;
      perTopic.clear();
    }
    chunk.push(r);
    bytes += size;
    perTopic.set(r.topic, (perTopic.get(r.topic) ?? 0) + size);
  }
  if (chunk.length > 0) yield chunk;
}
