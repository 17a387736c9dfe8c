import { type MonoTypeOperatorFunction, map } from 'rxjs';
import type { TombstonePolicy } from '../model/message.js';
import { decide, type Entry, withDeletes, withMessage } from '../model/outcome.js';
import { parseRecord } from '../model/parse.js';

export interface ParseRecordsOptions {
  readonly maxMessageBytes: number;
  readonly tombstones: TombstonePolicy;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses and validates each record synchronously, so offset order is kept: a valid one
 * gets its message, poison is decided a dead letter with its class and reason, a gap is
 * skipped, and a tombstone (a null value) follows TOMBSTONES: a dead letter (class
 * `tombstone`), ignored, or a delete of the profile of the client named by its key.
 *
 * ```
 * entries: --a--b--c--t--|       b is not JSON, t a tombstone (TOMBSTONES=delete, key "c-1")
 * parseRecords
 * output:  --A--x--C--T--|       A, C: message set; x: dead-letter invalid-json; T: deletes "c-1"
 * ```
 */
export function parseRecords(options: ParseRecordsOptions): MonoTypeOperatorFunction<Entry> {
  const { maxMessageBytes, tombstones } = options;
  return map((entry) => {
    if (entry.record.gap) return decide(entry, { kind: 'skipped' });
    const parsed = parseRecord(entry.record, maxMessageBytes);
    if (parsed.ok) return withMessage(entry, parsed.message);
    if (!('tombstone' in parsed)) {
      return decide(entry, { kind: 'dead-letter', errorClass: parsed.errorClass, reason: parsed.reason });
    }
    if (tombstones === 'ignore') return decide(entry, { kind: 'ignored' });
    const clientId = tombstones === 'delete' ? clientKey(entry.record.key) : undefined;
    if (clientId !== undefined) return withDeletes(entry, clientId);
    return decide(entry, {
      kind: 'dead-letter',
      errorClass: 'tombstone',
      reason:
        tombstones === 'delete'
          ? 'null value (tombstone) whose key is not a client id (TOMBSTONES=delete)'
          : 'null value (tombstone); TOMBSTONES=dead-letter',
    });
  });
}

/** The record key as a clientId: non-empty UTF-8, at most Elasticsearch's 512-byte `_id`. */
function clientKey(key: Buffer | null): string | undefined {
  if (key === null || key.length === 0 || key.length > 512) return undefined;
  try {
    return utf8.decode(key);
  } catch {
    return undefined;
  }
}
