import type { ProfileUpdate } from './message.js';

/** Which message a field's value came from: the key of the contract's merge rule. */
export interface FieldStamp {
  readonly version: number;
  readonly id: string;
}

/**
 * A client's profile as stored in Elasticsearch. `data` and `version` are the
 * contract; `fieldVersions` is the bookkeeping that makes the merge
 * order-independent (mapped `enabled: false`, so it is stored but not indexed).
 */
export interface ProfileDocument {
  readonly clientId: string;
  readonly version: number;
  readonly data: Record<string, unknown>;
  readonly fieldVersions: Record<string, FieldStamp>;
}

/** Several updates of one client folded into one: per field, the winning value and its stamp. */
export interface MergedUpdate {
  readonly clientId: string;
  readonly version: number;
  readonly fields: ReadonlyMap<string, { readonly value: unknown; readonly stamp: FieldStamp }>;
}

/** The contract's order: higher version wins; on equal versions the greater id wins. */
export function beats(a: FieldStamp, b: FieldStamp | undefined): boolean {
  if (b === undefined) return true;
  return a.version > b.version || (a.version === b.version && a.id > b.id);
}

/** Folds one client's updates (any order, duplicates allowed) into one update. */
export function mergeUpdates(updates: readonly ProfileUpdate[]): MergedUpdate {
  const first = updates[0];
  if (first === undefined) throw new RangeError('mergeUpdates needs at least one update');
  const fields = new Map<string, { value: unknown; stamp: FieldStamp }>();
  let version = first.version;
  for (const u of updates) {
    if (u.clientId !== first.clientId) {
      throw new RangeError(`mergeUpdates got clients ${first.clientId} and ${u.clientId}`);
    }
    version = Math.max(version, u.version);
    const stamp = { version: u.version, id: u.id };
    // Keys, not entries: no [field, value] pair per field (own enumerable string keys, the same set).
    const data = u.data;
    for (const field of Object.keys(data)) {
      if (beats(stamp, fields.get(field)?.stamp)) fields.set(field, { value: data[field], stamp });
    }
  }
  return { clientId: first.clientId, version, fields };
}

/**
 * Applies a merged update to the stored document (or to nothing). `changed` is
 * false when every field lost to what is stored: the update is stale.
 */
export function applyUpdate(
  doc: ProfileDocument | undefined,
  update: MergedUpdate,
): { document: ProfileDocument; changed: boolean } {
  // Copies by spread (own enumerable keys, defined, not assigned: a stored `__proto__` key
  // stays data), then each winning field set with setOwn: the key order Object.fromEntries
  // of a Map of the entries gives, without an entry pair per field and two Maps per update.
  const data: Record<string, unknown> = doc === undefined ? {} : { ...doc.data };
  const stamps: Record<string, FieldStamp> = doc === undefined ? {} : { ...doc.fieldVersions };
  let changed = doc === undefined;
  for (const [field, { value, stamp }] of update.fields) {
    if (beats(stamp, Object.hasOwn(stamps, field) ? stamps[field] : undefined)) {
      setOwn(data, field, value);
      setOwn(stamps, field, stamp);
      changed = true;
    }
  }
  const version = Math.max(doc?.version ?? update.version, update.version);
  if (version !== doc?.version) changed = true;
  return { document: { clientId: update.clientId, version, data, fieldVersions: stamps }, changed };
}

/**
 * Sets an own property: an assignment where that can only create or change one, a definition
 * where the key is inherited (`__proto__`, `constructor`, …), so no key can reach a prototype.
 */
function setOwn<V>(o: Record<string, V>, key: string, value: V): void {
  if (Object.hasOwn(o, key) || !(key in o)) o[key] = value;
  else Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}
