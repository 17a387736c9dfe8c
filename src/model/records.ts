import type { ErrorClass, RawRecord, UserEvent } from './message.js';
import type { OutRecord } from './out-record.js';
import { deadLetterLineage } from './replay.js';
import type { TriggerRule } from './trigger-rule.js';

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

type RuleField = 'type' | 'name' | 'clientId' | 'id';
const RULE_FIELDS: ReadonlySet<string> = new Set<RuleField>(['type', 'name', 'clientId', 'id']);

/** True when every field named in the rule's `when` equals the event's field of that name. */
export function matches(rule: TriggerRule, event: UserEvent): boolean {
  return compileWhen(rule)(event);
}

/** A rule's `when` turned into a predicate once: no object built per event. */
function compileWhen(rule: TriggerRule): (event: UserEvent) => boolean {
  const tests = Object.entries(rule.when).map(([field, want]) => {
    // A field a rule cannot name (config validation refuses them) never matches.
    if (!RULE_FIELDS.has(field)) return () => false;
    const f = field as RuleField;
    return (e: UserEvent) => e[f] === want;
  });
  return (e) => {
    for (const t of tests) if (!t(e)) return false;
    return true;
  };
}

/**
 * The trigger records for one newly indexed event (contract: id = "<sourceId>:<ruleId>"),
 * with the rules compiled once for every event of the partition.
 */
export function compileTriggers(
  triggersTopic: string,
  rules: readonly TriggerRule[],
): (event: UserEvent) => OutRecord[] {
  const compiled = rules.map((rule) => ({ rule, when: compileWhen(rule) }));
  return (event) => {
    const out: OutRecord[] = [];
    for (const { rule, when } of compiled) {
      if (!when(event)) continue;
      out.push({
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
      });
    }
    return out;
  };
}

/** The trigger records for one event (one-off; the graph uses {@link compileTriggers}). */
export function triggerRecords(
  triggersTopic: string,
  rules: readonly TriggerRule[],
  event: UserEvent,
): OutRecord[] {
  return compileTriggers(triggersTopic, rules)(event);
}
