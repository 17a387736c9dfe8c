import {
  Kafka,
  type KafkaConfig,
  logLevel,
  Partitioners,
  type Producer,
  type ProducerConfig,
  type SASLOptions,
} from 'kafkajs';
import type { KafkaSecurity } from '../config/security.js';
import { supportAllCompressionCodecs } from './kafka-compression.js';
import { StartupCheckError } from './startup-check-error.js';
import { tlsProblem } from './tls-problem.js';

/** Where and how to connect: the part of Config['kafka'] every Kafka client needs. */
export interface KafkaConnection extends KafkaSecurity {
  readonly brokers: readonly string[];
}

/** A kafkajs config from the connection settings and the caller's own client options. */
export function kafkaClientConfig(
  conn: KafkaConnection,
  options: Omit<KafkaConfig, 'brokers' | 'ssl' | 'sasl'>,
): KafkaConfig {
  const config: KafkaConfig = { ...options, brokers: [...conn.brokers] };
  if (conn.ssl !== undefined) {
    const { ca, cert, key } = conn.ssl;
    config.ssl =
      ca === undefined && cert === undefined
        ? true // the system's CAs
        : {
            rejectUnauthorized: true,
            ...(ca !== undefined && { ca: [ca] }),
            ...(cert !== undefined && { cert }),
            ...(key !== undefined && { key }),
          };
  }
  if (conn.sasl !== undefined) {
    const { mechanism, username, password } = conn.sasl;
    config.sasl = { mechanism, username, password } as SASLOptions;
  }
  return config;
}

/**
 * The heartbeat interval for a consumer group session: a third of the session (the most
 * Kafka's documentation advises), at most 3 s (kafkajs's default).
 */
export const heartbeatIntervalFor = (sessionTimeoutMs: number): number =>
  Math.min(3_000, Math.floor(sessionTimeoutMs / 3));

/**
 * A kafkajs client whose producers partition keyed records with `Partitioners.DefaultPartitioner`
 * (murmur2 of the key, as the Java client) unless the caller picks a partitioner. That is what
 * kafkajs 2 uses when none is given, chosen out loud: given none, kafkajs also writes a warning
 * about its v1 partitioner at the first producer, a line about kafkajs and not about this program.
 */
export class ExplicitPartitionerKafka extends Kafka {
  override producer(config: ProducerConfig = {}): Producer {
    return super.producer({
      ...config,
      createPartitioner: config.createPartitioner ?? Partitioners.DefaultPartitioner,
    });
  }
}

/**
 * The kafkajs client every part of rxingest uses (worker, produce, demo, tools), able to read
 * batches compressed with any of Kafka's codecs.
 */
export function createKafka(conn: KafkaConnection, options: Omit<KafkaConfig, 'brokers' | 'ssl' | 'sasl'>) {
  supportAllCompressionCodecs();
  return new ExplicitPartitionerKafka(kafkaClientConfig(conn, options));
}

/** What the start-up check looks at besides the connection. */
export interface KafkaCheckSettings extends KafkaConnection {
  readonly clientId: string;
  readonly groupId: string;
  readonly topics: readonly string[];
}

const where = (conn: KafkaConnection) => `Kafka at ${conn.brokers.join(',')}`;
const who = (conn: KafkaConnection) => (conn.sasl ? `user "${conn.sasl.username}"` : 'this client');

/**
 * The one-line cause when connecting failed because of the configuration (credentials,
 * certificates), or undefined when Kafka is merely unreachable (down, starting, refused).
 */
export function kafkaMisconfiguration(conn: KafkaConnection, err: unknown): string | undefined {
  const name = (err as Error | undefined)?.name ?? '';
  const message = (err as Error | undefined)?.message ?? '';
  if (name === 'KafkaJSSASLAuthenticationError' && conn.sasl) {
    const mech = conn.sasl.mechanism.toUpperCase();
    if (/not supported|unsupported/i.test(message)) {
      return `${where(conn)}: the broker does not offer SASL mechanism ${mech} (KAFKA_SASL_MECHANISM)`;
    }
    return `${where(conn)}: SASL authentication failed for ${who(conn)} (${mech}): wrong user name or password`;
  }
  const tls = tlsProblem(err);
  if (tls?.kind === 'untrusted') {
    return `${where(conn)}: TLS: ${tls.text}; set KAFKA_SSL_CA to the CA that signed the broker's certificate`;
  }
  if (tls?.kind === 'refused') {
    return `${where(conn)}: TLS: ${tls.text}; does the listener require a client certificate (KAFKA_SSL_CERT, KAFKA_SSL_KEY)?`;
  }
  if (tls?.kind === 'not-tls') {
    return `${where(conn)}: TLS: ${tls.text}; is KAFKA_SSL=true right for this listener?`;
  }
  return undefined;
}

/** The broker's error type behind a kafkajs error (TOPIC_AUTHORIZATION_FAILED, …), if any. */
const protocolType = (err: unknown): string | undefined => {
  for (
    let e = err as { type?: unknown; originalError?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 5;
    i++
  ) {
    if (typeof e.type === 'string') return e.type;
    e = (e.originalError ?? e.cause) as typeof e;
  }
  return undefined;
};

/**
 * Start-up check: connects once (no retries) with the configured TLS and SASL settings and
 * checks that the input topics and the consumer group may be used. Throws a StartupCheckError
 * (one line: the server and the cause) for a wrong password, an untrusted certificate, a
 * refused client certificate or a missing ACL. Returns quietly when Kafka is unreachable or a
 * topic does not exist yet: the worker's own connection retries and its topic wait report those.
 */
export async function checkKafka(
  cfg: KafkaCheckSettings,
  { connectionTimeoutMs = 5_000 } = {},
): Promise<void> {
  const admin = createKafka(cfg, {
    clientId: `${cfg.clientId}-check`,
    logLevel: logLevel.NOTHING,
    connectionTimeout: connectionTimeoutMs,
    retry: { retries: 0 },
  }).admin();
  try {
    try {
      await admin.connect();
    } catch (err) {
      const cause = kafkaMisconfiguration(cfg, err);
      if (cause !== undefined) throw new StartupCheckError('Kafka', cause);
      return;
    }
    const listed = new Set(await admin.listTopics());
    // A topic the principal may not describe is absent from the list, like a missing one:
    // asking for its metadata tells the two apart.
    const unlisted = cfg.topics.filter((t) => !listed.has(t));
    const denied: string[] = [];
    for (const topic of unlisted) {
      try {
        await admin.fetchTopicMetadata({ topics: [topic] });
      } catch (err) {
        if (protocolType(err) === 'TOPIC_AUTHORIZATION_FAILED') denied.push(topic);
      }
    }
    if (denied.length > 0) {
      throw new StartupCheckError(
        'Kafka',
        `${where(cfg)}: ${who(cfg)} is not authorized for topic ${denied.join(', ')} (TOPIC_AUTHORIZATION_FAILED): grant it Describe and Read`,
      );
    }
    const present = cfg.topics.filter((t) => listed.has(t));
    if (present.length > 0) {
      try {
        await admin.fetchOffsets({ groupId: cfg.groupId, topics: present });
      } catch (err) {
        if (protocolType(err) === 'GROUP_AUTHORIZATION_FAILED') {
          throw new StartupCheckError(
            'Kafka',
            `${where(cfg)}: ${who(cfg)} is not authorized for consumer group "${cfg.groupId}" (GROUP_AUTHORIZATION_FAILED): grant it Describe and Read on the group`,
          );
        }
      }
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
