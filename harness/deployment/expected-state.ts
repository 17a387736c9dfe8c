/**
 * An independent oracle for integration tests: from the raw values that were actually produced
 * (in any order), it computes what the contract says must come out — the poison, the `profiles`
 * and `events` documents and the trigger messages. It is written from docs/contract.md
 * alone and imports nothing from src/, so a bug in the worker cannot hide in a shared helper.
 *
 * Everything keyed by outside input lives in Maps or null-prototype objects: keys such as
 * `__proto__` are ordinary data (contract), and they cannot reach a prototype here either.
 */

export type OracleErrorClass = 'invalid-json' | 'schema' | 'too-large' | 'rejected' | 'tombstone';

export interface TriggerRule {
  readonly id: string;
  /** Every key must equal the message's field of the same name (deep equality for objects). */
  readonly when: Readonly<Record<string, unknown>>;
  readonly emit: string;
}

export interface ExpectedStateOptions {
  /** MAX_MESSAGE_BYTES: a value longer than this is poison. Default 1 MiB. */
  readonly maxMessageBytes?: number;
  /** The TRIGGER_RULES file's content. Default none. */
  readonly rules?: readonly TriggerRule[];
  /**
   * The contract speaks of "every unique event that matches a rule"; by default only
   * `type: "event"` messages are matched. Set to also match unique profile updates.
   */
  readonly matchProfiles?: boolean;
  /** TOMBSTONES: what a null value does. Default `dead-letter`. */
  readonly tombstones?: 'dead-letter' | 'ignore' | 'delete';
  /**
   * Valid messages that the test's own Elasticsearch mapping refuses (for example a string
   * where the test mapped a number): dead letters of class `rejected`, in no index, firing no
   * trigger (contract: a refusal of the document itself). Default none. A re-sent copy of a
   * refused message is not modelled: do not send one.
   */
  readonly refused?: (m: ValidMessage) => boolean;
}

/**
 * Anything that carries a produced value: a Buffer, null (a tombstone), or a record with
 * `.value` (and `.key`, which a tombstone under TOMBSTONES=delete names its client by).
 * Give them in the order they were produced: a delete removes what came before it.
 */
export type ProducedValue =
  | Buffer
  | null
  | { readonly value: Buffer | null; readonly key?: string | Buffer | null };

export interface PoisonVerdict {
  /** Position in the input. */
  readonly index: number;
  readonly value: Buffer | null;
  /**
   * The class the oracle would give it: `too-large`, `invalid-json`, `schema` (also nesting
   * deeper than Elasticsearch's 1,000 levels), or `tombstone` (a null value under
   * TOMBSTONES=dead-letter). The contract fixes only that it is poison. `rejected`: valid,
   * but refused by the mapping (options.refused); the contract fixes that class.
   */
  readonly errorClass: OracleErrorClass;
  readonly reason: string;
}

export interface ExpectedProfile {
  readonly version: number;
  /** Null-prototype object: the merged fields. */
  readonly data: Record<string, unknown>;
}

export interface ExpectedEvent {
  readonly clientId: string;
  readonly name: string;
  readonly ts: string;
  readonly data: Record<string, unknown>;
}

export interface ExpectedTrigger {
  readonly id: string;
  readonly rule: string;
  readonly trigger: string;
  readonly clientId: string;
  readonly sourceId: string;
  readonly ts: string;
}

export interface ExpectedState {
  /** Every poison value, in input order (a value sent twice appears twice). */
  readonly poison: readonly PoisonVerdict[];
  /** Number of valid values, duplicates included. */
  readonly accepted: number;
  /** Valid values whose id had already been seen. */
  readonly duplicates: number;
  /** Ids seen with different bytes: the contract makes the outcome for these order-dependent. */
  readonly conflictingIds: readonly string[];
  /** `profiles` index: `_id` (clientId) → `_source`. */
  readonly profiles: ReadonlyMap<string, ExpectedProfile>;
  /** `events` index: `_id` (message id) → `_source`. */
  readonly events: ReadonlyMap<string, ExpectedEvent>;
  /** Trigger topic: trigger id (`<sourceId>:<ruleId>`) → value. The Kafka key is `clientId`. */
  readonly triggers: ReadonlyMap<string, ExpectedTrigger>;
}

/** A message that passed every check. */
export interface ValidMessage {
  readonly id: string;
  readonly clientId: string;
  readonly type: 'profile' | 'event';
  readonly ts: string;
  readonly version?: number;
  readonly name?: string;
  /** Null-prototype copy of `data` (`{}` for an event without one). */
  readonly data: Record<string, unknown>;
  /** The parsed top-level object, for rule matching. */
  readonly raw: Readonly<Record<string, unknown>>;
}

export type Verdict =
  | { readonly ok: true; readonly message: ValidMessage }
  | { readonly ok: false; readonly errorClass: OracleErrorClass; readonly reason: string };

export const ORACLE_DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

const has = (o: object, k: string): boolean => Object.hasOwn(o, k);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const nonEmptyString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/** Elasticsearch refuses documents nested deeper than this; the worker documents them as poison. */
const MAX_DEPTH = 1000;

/** How deeply objects and arrays nest in a parsed value (no recursion: hostile input may be deep). */
function depthOf(v: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    if (d > max) max = d;
    for (const child of Object.values(x)) stack.push([child, d + 1]);
  }
  return max;
}

/** A deep copy made only of null-prototype objects and arrays (`__proto__` stays a plain key). */
function bareCopy(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(bareCopy);
  if (typeof v === 'object' && v !== null) {
    const o: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(v)) o[k] = bareCopy((v as Record<string, unknown>)[k]);
    return o;
  }
  return v;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Applies the contract's validity rules to one raw value. */
export function classifyValue(
  value: Buffer | null,
  maxMessageBytes = ORACLE_DEFAULT_MAX_MESSAGE_BYTES,
): Verdict {
  const poison = (errorClass: OracleErrorClass, reason: string): Verdict => ({
    ok: false,
    errorClass,
    reason,
  });
  if (value === null) return poison('tombstone', 'null value (tombstone)');
  if (value.length > maxMessageBytes) {
    return poison('too-large', `${value.length} bytes > MAX_MESSAGE_BYTES ${maxMessageBytes}`);
  }
  let parsed: unknown;
  try {
    // JSON.parse defines keys as own properties, so `__proto__` here cannot touch a prototype.
    parsed = JSON.parse(decoder.decode(value));
  } catch (err) {
    return poison('invalid-json', `not JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(parsed)) return poison('schema', 'not a JSON object');
  const m = parsed;
  const field = (k: string): unknown => (has(m, k) ? m[k] : undefined);

  const id = field('id');
  if (!nonEmptyString(id)) return poison('schema', 'id: expected a non-empty string');
  const clientId = field('clientId');
  if (!nonEmptyString(clientId)) return poison('schema', 'clientId: expected a non-empty string');
  const type = field('type');
  if (type !== 'profile' && type !== 'event') return poison('schema', 'type: expected "profile" or "event"');
  const ts = field('ts');
  if (typeof ts !== 'string' || Number.isNaN(Date.parse(ts))) {
    return poison('schema', 'ts: expected a date string');
  }
  const data = field('data');
  let version: number | undefined;
  let name: string | undefined;
  if (type === 'profile') {
    const v = field('version');
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      return poison('schema', 'version: expected a non-negative integer');
    }
    version = v;
    if (!isPlainObject(data)) return poison('schema', 'data: expected an object');
  } else {
    const n = field('name');
    if (!nonEmptyString(n)) return poison('schema', 'name: expected a non-empty string');
    name = n;
    if (!isPlainObject(data)) return poison('schema', 'data: expected an object');
  }
  if (depthOf(parsed) > MAX_DEPTH) return poison('schema', `nested deeper than ${MAX_DEPTH} levels`);

  return {
    ok: true,
    message: {
      id,
      clientId,
      type,
      ts,
      ...(version !== undefined ? { version } : {}),
      ...(name !== undefined ? { name } : {}),
      data: bareCopy(data ?? {}) as Record<string, unknown>,
      raw: m,
    },
  };
}

/** Deep equality for JSON values. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => has(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function matches(rule: TriggerRule, m: ValidMessage): boolean {
  return Object.keys(rule.when).every((k) => {
    const actual = k === 'data' ? m.data : has(m.raw, k) ? m.raw[k] : undefined;
    return jsonEqual(actual, rule.when[k]);
  });
}

/** Merge order: higher version wins, equal versions → greater id (JS string order) wins. */
const wins = (v: number, id: string, over: { version: number; id: string }): boolean =>
  v > over.version || (v === over.version && id > over.id);

/**
 * What the contract says the output must be, for these produced values (any order, duplicates
 * and replays included).
 */
export function expectedState(
  values: Iterable<ProducedValue>,
  options: ExpectedStateOptions = {},
): ExpectedState {
  const maxBytes = options.maxMessageBytes ?? ORACLE_DEFAULT_MAX_MESSAGE_BYTES;
  const rules = options.rules ?? [];

  const tombstones = options.tombstones ?? 'dead-letter';
  const poison: PoisonVerdict[] = [];
  const firstById = new Map<string, { bytes: Buffer; message: ValidMessage }>();
  // First copies and profile deletes, in the order produced: a delete removes what came before.
  const sequence: ({ message: ValidMessage } | { deletes: string })[] = [];
  const conflicting = new Set<string>();
  let accepted = 0;
  let duplicates = 0;

  let index = 0;
  for (const item of values) {
    const value = item === null || Buffer.isBuffer(item) ? item : item.value;
    if (value === null && tombstones !== 'dead-letter') {
      const key = item === null || Buffer.isBuffer(item) ? undefined : item.key;
      const client = key === undefined || key === null ? '' : String(key);
      if (tombstones === 'delete' && client !== '') sequence.push({ deletes: client });
      else if (tombstones === 'delete') {
        poison.push({ index, value, errorClass: 'tombstone', reason: 'tombstone without a client key' });
      }
      index++;
      continue;
    }
    const verdict = classifyValue(value, maxBytes);
    if (!verdict.ok) {
      poison.push({ index, value, errorClass: verdict.errorClass, reason: verdict.reason });
    } else if (options.refused?.(verdict.message)) {
      poison.push({ index, value, errorClass: 'rejected', reason: 'refused by the mapping' });
    } else {
      accepted++;
      const seen = firstById.get(verdict.message.id);
      if (seen) {
        duplicates++;
        if (!seen.bytes.equals(value as Buffer)) conflicting.add(verdict.message.id);
      } else {
        firstById.set(verdict.message.id, { bytes: value as Buffer, message: verdict.message });
        sequence.push({ message: verdict.message });
      }
    }
    index++;
  }

  // Per client and field: the winning (version, id, value).
  const fields = new Map<string, Map<string, { version: number; id: string; value: unknown }>>();
  const versions = new Map<string, number>();
  const events = new Map<string, ExpectedEvent>();
  const triggers = new Map<string, ExpectedTrigger>();

  for (const step of sequence) {
    if ('deletes' in step) {
      fields.delete(step.deletes);
      versions.delete(step.deletes);
      continue;
    }
    const m = step.message;
    if (m.type === 'profile') {
      const version = m.version as number;
      versions.set(m.clientId, Math.max(versions.get(m.clientId) ?? -1, version));
      let perField = fields.get(m.clientId);
      if (!perField) {
        perField = new Map();
        fields.set(m.clientId, perField);
      }
      for (const f of Object.keys(m.data)) {
        const cur = perField.get(f);
        if (!cur || wins(version, m.id, cur)) perField.set(f, { version, id: m.id, value: m.data[f] });
      }
    } else {
      events.set(m.id, { clientId: m.clientId, name: m.name as string, ts: m.ts, data: m.data });
    }
    if (m.type === 'event' || options.matchProfiles) {
      for (const rule of rules) {
        if (!matches(rule, m)) continue;
        const id = `${m.id}:${rule.id}`;
        triggers.set(id, {
          id,
          rule: rule.id,
          trigger: rule.emit,
          clientId: m.clientId,
          sourceId: m.id,
          ts: m.ts,
        });
      }
    }
  }

  const profiles = new Map<string, ExpectedProfile>();
  for (const [clientId, version] of versions) {
    const data: Record<string, unknown> = Object.create(null);
    for (const [f, w] of fields.get(clientId) ?? []) data[f] = w.value;
    profiles.set(clientId, { version, data });
  }

  return {
    poison,
    accepted,
    duplicates,
    conflictingIds: [...conflicting],
    profiles,
    events,
    triggers,
  };
}

/** A JSON round trip: turns the null-prototype objects into ordinary ones (safe: no forbidden keys survive). */
export const toPlain = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
