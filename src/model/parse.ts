import { isIsoTimestamp } from './iso-timestamp.js';
import type { ErrorClass, IngestMessage, RawRecord } from './message.js';

export type Parsed =
  | { readonly ok: true; readonly message: IngestMessage }
  | { readonly ok: false; readonly errorClass: ErrorClass; readonly reason: string }
  /** A null value: what it means is the TOMBSTONES setting's business, not the parser's. */
  | { readonly ok: false; readonly tombstone: true };

/**
 * Elasticsearch refuses documents nested deeper than this (Jackson's
 * StreamReadConstraints), and JSON.stringify runs out of stack a few thousand levels down:
 * deeper messages are poison here rather than a crash or a refusal later.
 */
export const MAX_NESTING_DEPTH = 1000;
/** Elasticsearch's limit for `_id` is 512 bytes; ids and clientIds become `_id`s. */
const MAX_ID_BYTES = 512;
/** A UTF-16 code unit takes at most 3 bytes of UTF-8: a string this short cannot pass the limit. */
const SURELY_SHORT_ID = Math.floor(MAX_ID_BYTES / 3);

class SchemaError extends Error {}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
/** Header values must stay on one line; V8's messages quote the input, line breaks included. */
const oneLine = (s: string) => s.replace(/[\r\n\u2028\u2029]+/g, ' ');

const poison = (errorClass: ErrorClass, reason: string): Parsed => ({ ok: false, errorClass, reason });
const TOMBSTONE: Parsed = { ok: false, tombstone: true };

/**
 * Turns one Kafka record into a contract message, or into poison with its error class
 * and a reason a person can act on. Never throws.
 *
 * Keys such as `__proto__`, `constructor` and `prototype` are ordinary field names
 * (contract): JSON.parse defines them as own properties, and nothing downstream assigns
 * outside keys to ordinary objects, so they are kept as data and never walked for.
 */
export function parseRecord(record: Pick<RawRecord, 'value'>, maxMessageBytes: number): Parsed {
  const value = record.value;
  if (value === null) return TOMBSTONE;
  if (value.length === 0) return poison('invalid-json', 'empty value');
  if (value.length > maxMessageBytes) {
    return poison('too-large', `value is ${value.length} bytes, over MAX_MESSAGE_BYTES=${maxMessageBytes}`);
  }
  // Nesting needs two bytes a level: only a value this long can be too deep to look at.
  if (value.length > 2 * MAX_NESTING_DEPTH && nestingDepth(value) > MAX_NESTING_DEPTH) {
    return poison('schema', `value is nested deeper than ${MAX_NESTING_DEPTH} levels`);
  }
  let json: unknown;
  try {
    // JSON text is UTF-8 (RFC 8259): bytes that are not are poison, not silently replaced.
    json = JSON.parse(utf8.decode(value));
  } catch (err) {
    return poison('invalid-json', oneLine((err as Error).message));
  }
  try {
    return { ok: true, message: validate(json) };
  } catch (err) {
    if (err instanceof SchemaError) return poison('schema', err.message);
    throw err;
  }
}

/** The deepest nesting of objects and arrays in JSON bytes, outside strings; one pass, no allocation. */
export function nestingDepth(bytes: Uint8Array): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (++depth > max) max = depth;
    } else if (b === 0x7d || b === 0x5d) depth--;
  }
  return max;
}

function validate(json: unknown): IngestMessage {
  if (!isPlainObject(json)) throw new SchemaError(`expected a JSON object, got ${describe(json)}`);
  const id = requireId(json, 'id');
  const clientId = requireId(json, 'clientId');
  const ts = json.ts;
  if (typeof ts !== 'string' || !isIsoTimestamp(ts)) {
    throw new SchemaError(`field "ts" must be an ISO 8601 timestamp, got ${describe(ts)}`);
  }
  const type = json.type;
  if (type === 'profile') {
    const version = json.version;
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
      throw new SchemaError(
        `field "version" must be a non-negative integer for a profile, got ${describe(version)}`,
      );
    }
    return { id, clientId, ts, type, version, data: requireData(json.data) };
  }
  if (type === 'event') {
    const name = json.name;
    if (typeof name !== 'string' || name.length === 0) {
      throw new SchemaError(`field "name" must be a non-empty string for an event, got ${describe(name)}`);
    }
    return { id, clientId, ts, type, name, data: requireData(json.data) };
  }
  throw new SchemaError(`field "type" must be "profile" or "event", got ${describe(type)}`);
}

function requireId(json: Record<string, unknown>, field: string): string {
  const v = json[field];
  if (typeof v !== 'string' || v.length === 0) {
    throw new SchemaError(`field "${field}" must be a non-empty string, got ${describe(v)}`);
  }
  if (v.length > SURELY_SHORT_ID && Buffer.byteLength(v) > MAX_ID_BYTES) {
    throw new SchemaError(`field "${field}" is longer than ${MAX_ID_BYTES} bytes`);
  }
  return v;
}

/** `data` is required for both types: the contract marks only `version` and `name` as type-specific. */
function requireData(data: unknown): Record<string, unknown> {
  if (data === undefined) throw new SchemaError('field "data" is required');
  if (!isPlainObject(data))
    throw new SchemaError(`field "data" must be a JSON object, got ${describe(data)}`);
  return data;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 40 ? `a string "${v.slice(0, 40)}…"` : `"${v}"`;
  return `${typeof v} ${typeof v === 'object' ? '' : String(v)}`.trim();
}
