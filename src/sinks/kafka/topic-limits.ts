import type { Admin, ConfigResourceTypes } from 'kafkajs';
import type { Logger } from 'pino';
import { describeError } from '../../model/failures.js';

/** The broker's own default for `message.max.bytes` (1 MiB and the old log overhead). */
export const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** kafkajs's ConfigResourceTypes (not importable by name from ESM: kafkajs's exports end in a spread). */
const TOPIC = 2 as ConfigResourceTypes;
const BROKER = 4 as ConfigResourceTypes;

type Describer = Pick<Admin, 'describeConfigs' | 'describeCluster'>;

/**
 * The `max.message.bytes` of the topics a commit writes to, read before the first record
 * goes to them, so that a record too large for its topic is truncated before it enters a
 * transaction rather than refused inside one. A topic that does not set it gets the
 * broker's `message.max.bytes`, which DescribeConfigs already reports as the topic's value;
 * the broker's own config is asked only when the topic's cannot be read, and the broker's
 * default assumed when neither can (both need the DescribeConfigs permission).
 *
 * One instance serves all of a worker's partitions: a limit changed while the worker runs
 * is read again when a send says so (`reread`), once for every partition that asks at
 * the same time.
 */
export class TopicLimits {
  private readonly limits = new Map<string, number>();
  private readonly reading = new Map<string, Promise<void>>();

  constructor(
    private readonly admin: Describer,
    private readonly log: Logger,
  ) {}

  /** The topic's limit as last read; the broker's default if it was never read. */
  limitOf = (topic: string): number => this.limits.get(topic) ?? BROKER_DEFAULT_MAX_MESSAGE_BYTES;

  /** True when every record's topic has been read (the common case: nothing to wait for). */
  knowsAll(topics: Iterable<string>): boolean {
    for (const t of topics) if (!this.limits.has(t)) return false;
    return true;
  }

  /** Reads the limits of the topics not read yet. */
  async ensure(topics: Iterable<string>): Promise<void> {
    const unknown = [...new Set(topics)].filter((t) => !this.limits.has(t));
    await Promise.all(unknown.map((t) => this.read(t)));
  }

  /** Reads the topics' limits again (a send was refused as too large). */
  async reread(topics: Iterable<string>): Promise<void> {
    await Promise.all([...new Set(topics)].map((t) => this.read(t)));
  }

  private read(topic: string): Promise<void> {
    let p = this.reading.get(topic);
    if (p === undefined) {
      p = this.describe(topic).finally(() => this.reading.delete(topic));
      this.reading.set(topic, p);
    }
    return p;
  }

  private async describe(topic: string): Promise<void> {
    const before = this.limits.get(topic);
    let limit: number | undefined;
    let reason: string | undefined;
    try {
      limit = await this.topicLimit(topic);
    } catch (err) {
      reason = describeError(err);
    }
    if (limit === undefined) {
      limit = await this.brokerLimit().catch((err: unknown) => {
        reason ??= describeError(err);
        return undefined;
      });
    }
    if (limit === undefined) {
      if (before !== undefined) return; // keep what was read before
      limit = BROKER_DEFAULT_MAX_MESSAGE_BYTES;
      this.log.warn(
        { outputTopic: topic, maxMessageBytes: limit, reason },
        "could not read an output topic's max.message.bytes; assuming the broker default",
      );
    }
    this.limits.set(topic, limit);
    if (before === undefined) {
      this.log.info({ outputTopic: topic, maxMessageBytes: limit }, 'output topic record limit read');
    } else if (before !== limit) {
      this.log.warn(
        { outputTopic: topic, maxMessageBytes: limit, previousMaxMessageBytes: before },
        "an output topic's max.message.bytes changed",
      );
    }
  }

  private async topicLimit(topic: string): Promise<number | undefined> {
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: TOPIC, name: topic, configNames: ['max.message.bytes'] }],
    });
    return configBytes(resources, 'max.message.bytes');
  }

  private async brokerLimit(): Promise<number | undefined> {
    const { brokers } = await this.admin.describeCluster();
    const broker = brokers[0];
    if (broker === undefined) return undefined;
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: BROKER, name: String(broker.nodeId), configNames: ['message.max.bytes'] }],
    });
    return configBytes(resources, 'message.max.bytes');
  }
}

function configBytes(
  resources: readonly { configEntries: readonly { configName: string; configValue: string }[] }[],
  name: string,
): number | undefined {
  const v = resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
  const n = v === undefined ? Number.NaN : Number(v);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
