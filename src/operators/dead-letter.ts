import { map, type OperatorFunction } from 'rxjs';
import type { Poison } from '../model/message.js';
import type { RecordDone } from '../model/outcome.js';
import { deadLetterRecord } from '../model/records.js';

/**
 * Poison is done once its dead-letter record is published, which happens in the
 * transaction that commits its offset: it is never lost and never committed
 * without its dead letter.
 *
 * ```
 * poison: --x--y--|
 * deadLetter
 * output: --X--Y--|      X = { offset, kind: 'dead-letter', payloads: [DLQ record of x] }
 * ```
 */
export function deadLetter(dlqTopic: string): OperatorFunction<Poison, RecordDone> {
  return map(({ record, errorClass, reason }) => ({
    offset: record.offset,
    kind: 'dead-letter',
    payloads: [deadLetterRecord(dlqTopic, record, errorClass, reason)],
  }));
}
