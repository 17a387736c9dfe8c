import type { Admin, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { greater } from '../../model/offset-tracker.js';

/**
 * The highest offset ever committed per input partition, kept in a compacted topic
 * (PROGRESS_TOPIC) that every commit writes inside its own Kafka transaction — so it is
 * exactly as durable as the commit, whatever point the worker is killed at. Each commit
 * also stores that number in the offset's metadata, which is where a partition normally
 * finds it; offsets reset by a tool (kafka-consumer-groups --reset-offsets, a rebuild) lose
 * the metadata, and only then is this topic read.
 *
 * A reset needs an empty group, so when metadata is missing nobody of this group has
 * committed since: one snapshot of the topic per process answers every such partition.
 */
export class ProgressLedger {
  private snapshot: Promise<Map<string, string>> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    readonly topic: string,
    private readonly log: Logger,
    private readonly timeoutMs = 120_000,
  ) {}

  /** The ledger's key for a partition of a pipeline (group ids may hold any character). */
  static keyOf(groupId: string, topic: string, partition: number): string {
    return `${encodeURIComponent(groupId)}/${topic}/${partition}`;
  }

  static value(highest: string): string {
    return JSON.stringify({ committed: highest });
  }

  /** The highest offset ever committed for this key, if the ledger knows one. */
  async highestOf(key: string): Promise<string | undefined> {
    this.snapshot ??= this.read().catch((err) => {
      this.snapshot = undefined;
      throw err;
    });
    return (await this.snapshot).get(key);
  }

  /** Reads the whole topic once, read_committed, up to the end it has now. */
  private async read(): Promise<Map<string, string>> {
    const started = Date.now();
    const ends = await this.admin.fetchTopicOffsets(this.topic);
    const target = new Map(ends.filter((p) => p.high !== p.low).map((p) => [p.partition, p.high]));
    const latest = new Map<string, string>();
    if (target.size === 0) return latest;
    const groupId = `rxingest-ledger-reader-${process.pid}-${Date.now()}`;
    const consumer = this.kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 100 });
    const position = new Map<number, string>();
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => {
      resolveDone = r;
    });
    const advance = (partition: number, lastOffset: string) => {
      const next = (BigInt(lastOffset) + 1n).toString();
      const cur = position.get(partition);
      if (cur === undefined || greater(next, cur)) position.set(partition, next);
      for (const [p, end] of target) {
        const at = position.get(p);
        if (at === undefined || greater(end, at)) return;
      }
      resolveDone();
    };
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.topic === this.topic) advance(payload.partition, payload.lastOffset);
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [this.topic], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const key = m.key?.toString('utf8');
            if (key === undefined) continue;
            if (m.value === null) latest.delete(key);
            else {
              const committed = parse(m.value.toString('utf8'));
              const cur = latest.get(key);
              if (committed !== undefined && (cur === undefined || greater(committed, cur)))
                latest.set(key, committed);
            }
          }
        },
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        done,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new Error(`PROGRESS_TOPIC ${this.topic}: not read to its end within ${this.timeoutMs} ms`),
              ),
            this.timeoutMs,
          );
        }),
      ]).finally(() => clearTimeout(timer));
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await this.admin.deleteGroups([groupId]).catch(() => undefined);
    }
    this.log.info(
      { topic: this.topic, keys: latest.size, ms: Date.now() - started },
      'read the progress ledger',
    );
    return latest;
  }
}

function parse(text: string): string | undefined {
  try {
    const v = (JSON.parse(text) as { committed?: unknown }).committed;
    return typeof v === 'string' && /^\d+$/.test(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
