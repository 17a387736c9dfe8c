import type { TriggerRule } from '../config/config.js';
import type { ErrorClass, RawRecord, UserEvent } from './message.js';
import type { OutRecord } from './out-record.js';
import { deadLetterLineage } from './replay.js';

/** The dead-letter record: the original key and value bytes, and why, in headers (contract). */
export function deadLetterRecord(
  dlqTopic: string,
  record: RawRecord,
  errorClass: ErrorClass,
  reason: string,
): OutRecord {
  return {
    topic: dlqTopic,
    key: record.key,
    value: record.value,
    headers: {
      'x-error-class': errorClass,
      // Header values travel as bytes; keep the reason readable and bounded.
      'x-error-message': reason.length > 1000 ? `${reason.slice(0, 1000)}…` : reason,
      'x-source-topic': record.topic,
      'x-source-partition': String(record.partition),
      'x-source-offset': record.offset,
      // A replayed record that is still bad: count the attempts, so nothing loops silently.
      ...deadLetterLineage(record.headers),
    },
  };
}

/** True when every field named in the rule's `when` equals the event's field of that name. */
export function matches(rule: TriggerRule, event: UserEvent): boolean {
  const fields: Record<string, unknown> = {
    type: event.type,
    name: event.name,
    clientId: event.clientId,
    id: event.id,
  };
  return Object.entries(rule.when).every(([k, v]) => Object.hasOwn(fields, k) && fields[k] === v);
}

/** The trigger records for one newly indexed event (contract: id = "<sourceId>:<ruleId>"). */
export function triggerRecords(
  triggersTopic: string,
  rules: readonly TriggerRule[],
  event: UserEvent,
): OutRecord[] {
  return rules
    .filter((rule) => matches(rule, event))
    .map((rule) => ({
      topic: triggersTopic,
      key: event.clientId,
      value: JSON.stringify({
        id: `${event.id}:${rule.id}`,
        rule: rule.id,
        trigger: rule.emit,
        clientId: event.clientId,
        sourceId: event.id,
        ts: event.ts,
      }),
    }));
}
