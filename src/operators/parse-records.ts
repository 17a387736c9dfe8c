import { map, type OperatorFunction } from 'rxjs';
import type { RawRecord } from '../model/message.js';
import { type Parsed, parseRecord } from '../model/parse.js';

/**
 * Parses and validates each record synchronously, so offset order is kept:
 * valid ones become envelopes, the rest poison with an error class and reason.
 *
 * ```
 * records: --a--b--c--|        b is not JSON
 * parseRecords
 * output:  --A--x--C--|        A, C: { ok: true, envelope }, x: { ok: false, errorClass: 'invalid-json' }
 * ```
 */
export function parseRecords(maxMessageBytes: number): OperatorFunction<RawRecord, Parsed> {
  return map((record) => parseRecord(record, maxMessageBytes));
}
