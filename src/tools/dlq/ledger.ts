import type { Kafka } from 'kafkajs';
import { readTopics, wholeTopics } from '../topic-reader.js';

/**
 * The replay ledger: a compacted topic `<DLQ_TOPIC>.replays`, one record per replayed dead
 * letter (key = its position "<dlqTopic>/<partition>/<offset>"), written in the same Kafka
 * transaction as the replayed records, so that a dead letter is either replayed and recorded
 * or neither. It is how a second `dlq replay` knows what the first one did.
 */
export interface LedgerEntry {
  /** The dead letter's lineage root. */
  readonly root: string;
  readonly cls: string;
  /** Where the replayed record was written: "<topic>/<partition>". */
  readonly to: string;
  readonly replayCount: number;
  readonly at: string;
}

export const ledgerTopic = (dlqTopic: string) => `${dlqTopic}.replays`;

export interface Ledger {
  /** Dead letter position → its replay. */
  readonly byDeadLetter: Map<string, LedgerEntry>;
  /** Lineage root → how many times it was replayed (the highest replay count recorded). */
  readonly roots: Map<string, number>;
}

export async function readLedger(kafka: Kafka, dlqTopic: string): Promise<Ledger> {
  const topic = ledgerTopic(dlqTopic);
  const admin = kafka.admin();
  await admin.connect();
  let ranges: Awaited<ReturnType<typeof wholeTopics>>;
  try {
    if (!(await admin.listTopics()).includes(topic)) return { byDeadLetter: new Map(), roots: new Map() };
    ranges = await wholeTopics(admin, [topic]);
  } finally {
    await admin.disconnect();
  }
  const byDeadLetter = new Map<string, LedgerEntry>();
  const roots = new Map<string, number>();
  await readTopics(kafka, ranges, (records) => {
    for (const r of records) {
      if (r.key === null || r.value === null) continue;
      try {
        const e = JSON.parse(String(r.value)) as LedgerEntry;
        byDeadLetter.set(r.key.toString('utf8'), e);
        roots.set(e.root, Math.max(roots.get(e.root) ?? 0, Number(e.replayCount) || 1));
      } catch {
        // Not ours: a ledger record is JSON; skip anything else.
      }
    }
  });
  return { byDeadLetter, roots };
}

export async function ensureLedgerTopic(kafka: Kafka, dlqTopic: string): Promise<void> {
  const topic = ledgerTopic(dlqTopic);
  const admin = kafka.admin();
  await admin.connect();
  try {
    if ((await admin.listTopics()).includes(topic)) return;
    await admin
      .createTopics({
        topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
        waitForLeaders: true,
      })
      .catch(async (err) => {
        if (!(await admin.listTopics()).includes(topic)) throw err;
      });
  } finally {
    await admin.disconnect();
  }
}
