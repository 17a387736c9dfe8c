import { map, type OperatorFunction } from 'rxjs';
import type { TriggerRule } from '../config/config.js';
import type { BatchEntry, RecordDone } from '../model/outcome.js';
import { deadLetterRecord, triggerRecords } from '../model/records.js';

/**
 * Finishes a batch: every entry becomes a RecordDone for the offset tracker.
 * Events indexed by this record carry one trigger record per matching rule;
 * dead letters carry their DLQ record. Both are published in the same Kafka
 * transaction that commits the offset, so a trigger goes out exactly when its
 * event's offset is committed.
 *
 * ```
 * batches: --[e1✓ e2' p1✓ x!]--|      e1 matches rule r; e2' a duplicate; x dead-lettered
 * emitTriggers
 * output:  --[d(e1,[t]) d(e2) d(p1) d(x,[dlq])]--|
 * ```
 */
export function emitTriggers(
  rules: readonly TriggerRule[],
  topics: { readonly triggers: string; readonly dlq: string },
): OperatorFunction<BatchEntry[], RecordDone[]> {
  return map((batch) =>
    batch.map(({ envelope, outcome }): RecordDone => {
      const { message, record } = envelope;
      if (outcome === undefined) {
        throw new Error(
          `${record.topic}[${record.partition}]@${record.offset}: message ${message.id} left the index stages undecided`,
        );
      }
      const payloads =
        outcome.kind === 'dead-letter'
          ? [deadLetterRecord(topics.dlq, record, outcome.errorClass, outcome.reason)]
          : outcome.kind === 'indexed' && message.type === 'event'
            ? triggerRecords(topics.triggers, rules, message)
            : [];
      const { offset } = record;
      return outcome.kind === 'indexed'
        ? { offset, payloads, kind: outcome.kind, clientId: message.clientId, ts: message.ts }
        : { offset, payloads, kind: outcome.kind, clientId: message.clientId };
    }),
  );
}
