import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, Kafka, KafkaMessage, Producer } from 'kafkajs';
import { heartbeatIntervalFor } from '../clients/kafka.js';

/**
 * The operators' shed/unshed decisions, for every worker of a consumer group, on a
 * compacted Kafka topic (CONTROL_TOPIC): key `["shed", group, topic]`, value the decision
 * as JSON, a tombstone (null value) for "unshed". Compaction keeps the latest decision per
 * key, so a worker that starts reads the current decisions from the beginning.
 *
 * Why Kafka and not Redis: Redis is optional for ingestion (the worker keeps working with it
 * down, contract), and a shed decision is made during incidents, when Redis may be the
 * thing that is down. Kafka is up whenever ingestion is; the decision is durable, ordered
 * and survives restarts of the workers and of Redis.
 */

export interface ShedDecision {
  readonly topic: string;
  readonly group: string;
  /** Who decided (user@host by default). */
  readonly by: string;
  /** When (ISO 8601). */
  readonly at: string;
  readonly reason?: string;
}

export const shedKey = (group: string, topic: string): string => JSON.stringify(['shed', group, topic]);

function parseKey(key: Buffer | null): { group: string; topic: string } | undefined {
  if (key === null) return undefined;
  try {
    const k = JSON.parse(key.toString('utf8')) as unknown;
    if (
      Array.isArray(k) &&
      k.length === 3 &&
      k[0] === 'shed' &&
      typeof k[1] === 'string' &&
      typeof k[2] === 'string'
    )
      return { group: k[1], topic: k[2] };
  } catch {}
  return undefined;
}

/** Creates the control topic (compacted, one partition) when it is missing. Returns a warning when it exists but is not compacted. */
export async function ensureControlTopic(admin: Admin, topic: string): Promise<string | undefined> {
  const existing = await admin.listTopics();
  if (!existing.includes(topic)) {
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
      });
      return undefined;
    } catch (err) {
      if (!(await admin.listTopics()).includes(topic)) throw err; // else: created by someone else meanwhile
    }
  }
  const res = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: 2 as never, name: topic, configNames: ['cleanup.policy'] }],
  });
  const policy = res.resources[0]?.configEntries.find((c) => c.configName === 'cleanup.policy')?.configValue;
  return policy !== undefined && !policy.split(',').includes('compact')
    ? `${topic} has cleanup.policy=${policy}: decisions older than its retention will be forgotten (set cleanup.policy=compact)`
    : undefined;
}

/** Writes a decision: shed the topic (`decision` given) or unshed it (`null`: a tombstone). */
export async function publishShedDecision(
  producer: Pick<Producer, 'send'>,
  controlTopic: string,
  group: string,
  topic: string,
  decision: Omit<ShedDecision, 'topic' | 'group'> | null,
): Promise<void> {
  await producer.send({
    topic: controlTopic,
    acks: -1,
    messages: [
      {
        key: shedKey(group, topic),
        value: decision === null ? null : JSON.stringify({ topic, group, ...decision }),
      },
    ],
  });
}

export interface ShedSubscriberOptions {
  readonly controlTopic: string;
  readonly group: string;
  /** Called with every decision of the group, each time they change (after `ready`). */
  readonly onChange?: (decisions: ReadonlyMap<string, ShedDecision>) => void;
  /** A record that is not a decision (it is skipped). */
  readonly onInvalid?: (offset: string, why: string) => void;
  /**
   * The session timeout of its consumer (default kafkajs's 30 s). A crash while Kafka is
   * unreachable leaves its old member in its group until the session runs out, and the
   * rejoin — and a stop() during it — waits for that: the worker passes its own
   * KAFKA_SESSION_TIMEOUT_MS, so that its shutdown after a Kafka outage waits no longer on
   * this consumer than on the ingestion one.
   */
  readonly sessionTimeoutMs?: number;
}

/**
 * Follows the control topic and keeps the group's current decisions. It reads with a
 * consumer group of its own (unique, never committed: every worker reads everything), so
 * it does not take part in the ingestion group's assignment.
 */
export class ShedDecisionSubscriber {
  private readonly decisions = new Map<string, ShedDecision>();
  private consumer: Consumer | undefined;
  private remaining = new Map<number, bigint>();
  private markReady!: () => void;
  /** Resolves once everything the topic held at start() has been read. */
  readonly ready: Promise<void>;
  private isReady = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly o: ShedSubscriberOptions,
  ) {
    this.ready = new Promise((resolve) => {
      this.markReady = resolve;
    });
  }

  /** The group's decisions, by topic. */
  get current(): ReadonlyMap<string, ShedDecision> {
    return this.decisions;
  }

  async start(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      for (const p of await admin.fetchTopicOffsets(this.o.controlTopic)) {
        if (BigInt(p.high) > BigInt(p.low)) this.remaining.set(p.partition, BigInt(p.high));
      }
    } finally {
      await admin.disconnect();
    }
    const session = this.o.sessionTimeoutMs;
    this.consumer = this.kafka.consumer({
      groupId: `rxingest-control-${randomUUID()}`,
      ...(session === undefined
        ? {}
        : { sessionTimeout: session, heartbeatInterval: heartbeatIntervalFor(session) }),
      maxWaitTimeInMs: 200,
      retry: { retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 5_000 },
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [this.o.controlTopic], fromBeginning: true });
    this.checkReady();
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        let changed = false;
        for (const m of batch.messages) changed = this.apply(m) || changed;
        const last = batch.messages.at(-1);
        const target = this.remaining.get(batch.partition);
        if (last && target !== undefined && BigInt(last.offset) + 1n >= target)
          this.remaining.delete(batch.partition);
        const wasReady = this.isReady;
        this.checkReady();
        if (this.isReady && (changed || !wasReady)) this.o.onChange?.(this.decisions);
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }

  private checkReady(): void {
    if (!this.isReady && this.remaining.size === 0) {
      this.isReady = true;
      this.markReady();
    }
  }

  private apply(m: KafkaMessage): boolean {
    const key = parseKey(m.key);
    if (key === undefined) {
      this.o.onInvalid?.(m.offset, 'key is not ["shed", group, topic]');
      return false;
    }
    if (key.group !== this.o.group) return false;
    if (m.value === null) return this.decisions.delete(key.topic);
    try {
      const v = JSON.parse(m.value.toString('utf8')) as Partial<ShedDecision>;
      const decision: ShedDecision = {
        topic: key.topic,
        group: key.group,
        by: typeof v.by === 'string' ? v.by : 'unknown',
        at: typeof v.at === 'string' ? v.at : '',
        ...(typeof v.reason === 'string' ? { reason: v.reason } : {}),
      };
      this.decisions.set(key.topic, decision);
      return true;
    } catch {
      this.o.onInvalid?.(m.offset, 'value is not JSON');
      return false;
    }
  }
}

/** Reads the group's current decisions once (for `rxingest shed --list`). */
export async function readShedDecisions(
  kafka: Kafka,
  controlTopic: string,
  group: string,
  timeoutMs = 30_000,
): Promise<ReadonlyMap<string, ShedDecision>> {
  const sub = new ShedDecisionSubscriber(kafka, { controlTopic, group });
  try {
    await sub.start();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`reading ${controlTopic} did not finish within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([sub.ready, timedOut]);
    } finally {
      clearTimeout(timer);
    }
    return new Map(sub.current);
  } finally {
    await sub.stop().catch(() => undefined);
  }
}
