import type { Kafka, Message } from 'kafkajs';
import type { Config } from '../../config/config.js';
import { parseRecord } from '../../model/parse.js';
import { REPLAY_COUNT, REPLAY_OF, REPLAY_ROOT } from '../../model/replay.js';
import { countByClass, type DeadLetter } from './dead-letter.js';
import { ensureLedgerTopic, type Ledger, type LedgerEntry, ledgerTopic, readLedger } from './ledger.js';
import { type DeadLetterFilter, readDeadLetters, readOne } from './read.js';

export interface ReplayOptions extends DeadLetterFilter {
  readonly dryRun?: boolean;
  /**
   * Replay lineages that were replayed before, and records that are still poison with the
   * current settings: one more attempt per run.
   */
  readonly force?: boolean;
  /** A lineage dead-lettered this many times is not replayed again, even with force. */
  readonly maxAttempts?: number;
}

export type ReplayOutcome =
  | 'replayed'
  | 'already-replayed'
  | 'still-bad'
  | 'gave-up'
  | 'source-gone'
  | 'no-source';

export interface ReplayDecision {
  readonly deadLetter: DeadLetter;
  readonly outcome: ReplayOutcome;
  readonly why?: string;
}

export interface ReplayResult {
  readonly dryRun: boolean;
  /** Outcome → class → count. */
  readonly counts: Record<ReplayOutcome, Record<string, number>>;
  readonly decisions: readonly ReplayDecision[];
}

const CHUNK = 500;

/**
 * Puts dead letters' original records back on their source topic and partition, with their
 * original key, marked as replays (x-replay-of, x-replay-root, x-replay-count).
 *
 * Replaying twice changes nothing: a dead letter whose lineage was replayed (the ledger,
 * written in the same transaction as the replayed records) is not replayed again, and a
 * record that is still poison with the current settings (the worker's own parser, size
 * limit and TOMBSTONES) is not put back at all, so it cannot come back as a new dead letter.
 * Only `rejected` (Elasticsearch refused the document) cannot be foreseen: such a replay
 * may fail again, and its new dead letter counts the attempt (x-dead-letter-count).
 */
export async function replayDeadLetters(
  kafka: Kafka,
  config: Config,
  opts: ReplayOptions = {},
): Promise<ReplayResult> {
  const maxAttempts = opts.maxAttempts ?? 5;
  const [deadLetters, ledger] = await Promise.all([
    readDeadLetters(kafka, config, opts),
    readLedger(kafka, config.kafka.dlqTopic),
  ]);

  // With force, only the latest dead letter of each lineage is a candidate.
  const latest = new Map<string, DeadLetter>();
  for (const d of deadLetters) {
    const l = latest.get(d.root);
    if (l === undefined || d.deadLetterCount > l.deadLetterCount) latest.set(d.root, d);
  }

  const decisions: ReplayDecision[] = [];
  const toSend: { d: DeadLetter; message: Message; topic: string; replayCount: number }[] = [];
  for (const d of deadLetters) {
    const decision = await decide(kafka, config, d, ledger, latest, maxAttempts, opts.force === true);
    if ('outcome' in decision) {
      decisions.push(decision);
      continue;
    }
    decisions.push({ deadLetter: d, outcome: 'replayed' });
    toSend.push({ d, topic: d.source!.topic, message: decision.message, replayCount: decision.replayCount });
  }

  if (!opts.dryRun && toSend.length > 0) await send(kafka, config, toSend);

  return { dryRun: opts.dryRun === true, counts: countOutcomes(decisions), decisions };
}

const OUTCOMES: readonly ReplayOutcome[] = [
  'replayed',
  'already-replayed',
  'still-bad',
  'gave-up',
  'source-gone',
  'no-source',
];

/** Outcome → class → count. Classes are header values (input): see countByClass. */
export function countOutcomes(
  decisions: readonly ReplayDecision[],
): Record<ReplayOutcome, Record<string, number>> {
  const out = {} as Record<ReplayOutcome, Record<string, number>>;
  for (const outcome of OUTCOMES) {
    out[outcome] = countByClass(decisions.filter((d) => d.outcome === outcome).map((d) => d.deadLetter));
  }
  return out;
}

async function decide(
  kafka: Kafka,
  config: Config,
  d: DeadLetter,
  ledger: Ledger,
  latest: Map<string, DeadLetter>,
  maxAttempts: number,
  force: boolean,
): Promise<ReplayDecision | { message: Message; replayCount: number }> {
  if (d.source === undefined) return { deadLetter: d, outcome: 'no-source', why: 'no x-source-* headers' };
  if (!force && (ledger.byDeadLetter.has(d.position) || ledger.roots.has(d.root))) {
    return {
      deadLetter: d,
      outcome: 'already-replayed',
      why: `${ledger.byDeadLetter.has(d.position) ? 'it' : `its lineage ${d.root}`} was replayed (--force for another attempt)`,
    };
  }
  if (force && latest.get(d.root) !== d) {
    return { deadLetter: d, outcome: 'already-replayed', why: 'a later dead letter of its lineage exists' };
  }
  // Attempts so far: the first one, plus one per replay (from the ledger, or from the dead
  // letter's own count should the ledger be gone).
  const replays = Math.max(ledger.roots.get(d.root) ?? 0, d.deadLetterCount - 1);
  if (replays + 1 >= maxAttempts) {
    return {
      deadLetter: d,
      outcome: 'gave-up',
      why: `tried ${replays + 1} times (--max-attempts ${maxAttempts})`,
    };
  }

  let value = d.value;
  let key = d.key;
  if (d.truncated) {
    // The dead letter holds only the first bytes: the original is still on the source topic.
    const one = await readOne(kafka, d.source.topic, d.source.partition, BigInt(d.source.offset));
    if ('gone' in one) return { deadLetter: d, outcome: 'source-gone', why: one.gone };
    const original = one.record;
    if (!startsWith(original.value, d.value) || !startsWith(original.key, d.key)) {
      return {
        deadLetter: d,
        outcome: 'source-gone',
        why: 'the record at x-source-offset is not the one dead-lettered',
      };
    }
    value = original.value;
    key = original.key;
  }

  if (!force && d.cls !== 'rejected') {
    const still = stillPoison(config, d, value);
    if (still !== undefined) return { deadLetter: d, outcome: 'still-bad', why: still };
  }

  const headers: Record<string, string> = {
    [REPLAY_OF]: d.position,
    [REPLAY_ROOT]: d.root,
    [REPLAY_COUNT]: String(replays + 1),
  };
  return {
    replayCount: replays + 1,
    message: { key, value, headers, partition: d.source.partition },
  };
}

/** The original's bytes begin with the dead letter's (kept whole or cut); null only matches null. */
const startsWith = (original: Buffer | null, kept: Buffer | null): boolean =>
  original === null || kept === null ? original === kept : original.subarray(0, kept.length).equals(kept);

/** Why the record would be dead-lettered again with the current settings, or undefined. */
function stillPoison(config: Config, d: DeadLetter, value: Buffer | null): string | undefined {
  if (value === null) {
    return config.graph.tombstones === 'dead-letter' ? 'a tombstone, and TOMBSTONES=dead-letter' : undefined;
  }
  const parsed = parseRecord({ value }, config.graph.maxMessageBytes);
  if (parsed.ok || 'tombstone' in parsed) return undefined;
  return parsed.errorClass === d.cls ? parsed.reason : `${parsed.errorClass}: ${parsed.reason}`;
}

async function send(
  kafka: Kafka,
  config: Config,
  items: { d: DeadLetter; message: Message; topic: string; replayCount: number }[],
) {
  await ensureLedgerTopic(kafka, config.kafka.dlqTopic);
  const producer = kafka.producer({
    // One replayer at a time per pipeline: a second one fences the first.
    transactionalId: `${config.kafka.groupId}.dlq-replay`,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  try {
    for (let i = 0; i < items.length; i += CHUNK) {
      const chunk = items.slice(i, i + CHUNK);
      const txn = await producer.transaction();
      try {
        const byTopic = new Map<string, Message[]>();
        for (const it of chunk) byTopic.set(it.topic, [...(byTopic.get(it.topic) ?? []), it.message]);
        const at = new Date().toISOString();
        const ledger: Message[] = chunk.map((it) => ({
          key: it.d.position,
          value: JSON.stringify({
            root: it.d.root,
            cls: it.d.cls,
            to: `${it.topic}/${it.message.partition}`,
            replayCount: it.replayCount,
            at,
          } satisfies LedgerEntry),
        }));
        await txn.sendBatch({
          topicMessages: [
            ...[...byTopic].map(([topic, messages]) => ({ topic, messages })),
            { topic: ledgerTopic(config.kafka.dlqTopic), messages: ledger },
          ],
        });
        await txn.commit();
      } catch (err) {
        await txn.abort().catch(() => undefined);
        throw err;
      }
    }
  } finally {
    await producer.disconnect();
  }
}
