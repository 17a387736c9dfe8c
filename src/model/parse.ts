import type { Envelope, ErrorClass, IngestMessage, Poison, RawRecord } from './message.js';

export type Parsed = { readonly ok: true; readonly envelope: Envelope } | ({ readonly ok: false } & Poison);

/** Keys that could reach an object prototype if code ever assigned them. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
/** Elasticsearch's limit for `_id` is 512 bytes; ids and clientIds become `_id`s. */
const MAX_ID_BYTES = 512;
/** ISO 8601 as Elasticsearch's `strict_date_optional_time` accepts it. */
const ISO_TS = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

class SchemaError extends Error {}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
/** Header values must stay on one line; V8's messages quote the input, line breaks included. */
const oneLine = (s: string) => s.replace(/[\r\n\u2028\u2029]+/g, ' ');

const poison = (record: RawRecord, errorClass: ErrorClass, reason: string): Parsed => ({
  ok: false,
  record,
  errorClass,
  reason,
});

/**
 * Turns one Kafka record into a contract message, or into poison with its error
 * class and a reason a person can act on. Never throws.
 */
export function parseRecord(record: RawRecord, maxMessageBytes: number): Parsed {
  const value = record.value;
  if (value === null || value.length === 0) return poison(record, 'invalid-json', 'empty value (tombstone)');
  if (value.length > maxMessageBytes) {
    return poison(
      record,
      'too-large',
      `value is ${value.length} bytes, over MAX_MESSAGE_BYTES=${maxMessageBytes}`,
    );
  }
  let json: unknown;
  try {
    // JSON text is UTF-8 (RFC 8259): bytes that are not are poison, not silently replaced.
    json = JSON.parse(utf8.decode(value));
  } catch (err) {
    return poison(record, 'invalid-json', oneLine((err as Error).message));
  }
  try {
    return { ok: true, envelope: { message: validate(json), record } };
  } catch (err) {
    if (err instanceof SchemaError) return poison(record, 'schema', err.message);
    throw err;
  }
}

function validate(json: unknown): IngestMessage {
  if (!isPlainObject(json)) throw new SchemaError(`expected a JSON object, got ${describe(json)}`);
  const id = requireId(json, 'id');
  const clientId = requireId(json, 'clientId');
  const ts = json.ts;
  if (typeof ts !== 'string' || !ISO_TS.test(ts) || Number.isNaN(Date.parse(ts))) {
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
  if (Buffer.byteLength(v) > MAX_ID_BYTES) {
    throw new SchemaError(`field "${field}" is longer than ${MAX_ID_BYTES} bytes`);
  }
  return v;
}

/** `data` is required for both types: the contract marks only `version` and `name` as type-specific. */
function requireData(data: unknown): Record<string, unknown> {
  if (data === undefined) throw new SchemaError('field "data" is required');
  if (!isPlainObject(data))
    throw new SchemaError(`field "data" must be a JSON object, got ${describe(data)}`);
  const bad = findForbiddenKey(data, 'data');
  if (bad)
    throw new SchemaError(`forbidden key at ${bad}: keys __proto__, constructor and prototype are refused`);
  return data;
}

/** Walks the whole value (iteratively: hostile nesting must not blow the stack). */
function findForbiddenKey(root: unknown, rootPath: string): string | undefined {
  const stack: [unknown, string][] = [[root, rootPath]];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (Array.isArray(node)) {
      node.forEach((v, i) => {
        stack.push([v, `${path}[${i}]`]);
      });
    } else if (node !== null && typeof node === 'object') {
      for (const key of Object.keys(node)) {
        if (FORBIDDEN_KEYS.has(key)) return `${path}.${key}`;
        stack.push([(node as Record<string, unknown>)[key], `${path}.${key}`]);
      }
    }
  }
  return undefined;
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
