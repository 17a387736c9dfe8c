import { map, type OperatorFunction } from 'rxjs';
import { greater } from '../model/offset-tracker.js';
import type { OutRecord } from '../model/out-record.js';
import type { Done, Entry, Outcome } from '../model/outcome.js';
import { compileTriggers, deadLetterRecord } from '../model/records.js';
import type { TriggerRule } from '../model/trigger-rule.js';

export interface AttachOutputsOptions {
  readonly rules: readonly TriggerRule[];
  readonly topics: { readonly triggers: string; readonly dlq: string };
  /**
   * The partition's highest offset ever committed (exclusive). A record below it was
   * committed once already, with its triggers and dead letter: after an offset reset it is
   * reprocessed, so its documents are rebuilt, but its outputs are not sent again.
   */
  readonly replayedBelow?: string;
}

/**
 * Turns decided entries into what the commit must publish: the dead letter of a dead
 * record (the original bytes and why, contract headers), and the triggers of an event
 * this record owns (one per matching rule: exactly once, since exactly one record owns an
 * event id). Duplicates, stale updates and everything below `replayedBelow` publish nothing.
 *
 * ```
 * batches: --[e1✓ e2' p1✓ x!]--|      e1 matches rule r; e2' a duplicate; x dead-lettered
 * attachOutputs
 * output:  --[E1 E2 P1 X]--|          E1 carries r's trigger, X the dead letter; E2, P1 nothing
 * ```
 */
export function attachOutputs(options: AttachOutputsOptions): OperatorFunction<Entry[], Done[]> {
  const { topics, replayedBelow } = options;
  const triggersOf = compileTriggers(topics.triggers, options.rules);
  const hasRules = options.rules.length > 0;
  return map((batch) =>
    batch.map((entry): Done => {
      const outcome = entry.outcome;
      if (outcome === undefined) {
        throw new Error(
          `${entry.record.topic}[${entry.record.partition}] offset ${entry.record.offset}: reached the commit undecided`,
        );
      }
      const decided = entry as Entry & { outcome: Outcome };
      let payloads: readonly OutRecord[] = NONE;
      if (outcome.kind === 'dead-letter') {
        payloads = [deadLetterRecord(topics.dlq, entry.record, outcome.errorClass, outcome.reason)];
      } else if (hasRules && outcome.kind === 'indexed' && entry.message?.type === 'event') {
        payloads = triggersOf(entry.message);
      }
      if (payloads.length > 0 && replayedBelow !== undefined && greater(replayedBelow, entry.record.offset)) {
        payloads = NONE;
      }
      return { seq: entry.seq, payloads, entry: decided };
    }),
  );
}

const NONE: readonly OutRecord[] = [];
