import type { Redis } from 'ioredis';
import type { Kafka, KafkaConfig } from 'kafkajs';
import { z } from 'zod';
import { type KafkaSecurity, loadRedisSecurity, type RedisSecurity } from '../../config/security.js';
import { DEFAULT_MAX_MESSAGE_BYTES, type WorkloadOptions } from '../../generator/workload.js';
import { DEFAULT_CONTROL_KEY_PREFIX } from '../../protocol/control-keys.js';

/** The options as commander hands them over (strings, or true for a bare optional value). */
export interface RawProduceOptions {
  brokers?: string;
  topic?: string;
  rate?: string;
  duration?: string;
  count?: string;
  clients?: string;
  profileShare?: string;
  duplicateShare?: string;
  poisonShare?: string;
  hostileKeyShare?: string;
  hotClients?: string;
  hotShare?: string;
  seed?: string;
  createTopic?: string;
  maxMessageBytes?: string;
  shuffleVersions?: string | boolean;
  eventNames?: string;
  json?: boolean;
  quiet?: boolean;
  redisUrl?: string;
  controlKeyPrefix?: string;
  ignoreLimits?: boolean;
}

export interface ProduceSettings {
  readonly brokers: string[];
  readonly topic: string;
  /** Partitions to create the topic with when it is missing; undefined = do not create. */
  readonly createTopic: number | undefined;
  readonly workload: WorkloadOptions & { readonly seed: number; readonly maxMessageBytes: number };
  readonly json: boolean;
  readonly quiet: boolean;
  /** TLS and SASL, from the worker's variables (KAFKA_SSL…, KAFKA_SASL_…); none by default. */
  readonly security?: KafkaSecurity;
  /** Where the workers publish producer limits and hot clients; undefined: no push-back. */
  readonly control:
    | { readonly redisUrl: string; readonly keyPrefix: string; readonly redisSecurity: RedisSecurity }
    | undefined;
}

/** A bad option value; the message is the one line the user sees (after "error: "). */
export class OptionError extends Error {
  override name = 'OptionError';
}

export type Env = Readonly<Record<string, string | undefined>>;

export interface ProduceCommandDeps {
  /** Environment for the defaults (KAFKA_BROKERS, INGEST_TOPICS, MAX_MESSAGE_BYTES). Default process.env. */
  readonly env?: Env;
  readonly createKafka?: (config: KafkaConfig) => Kafka;
  /** Where the summary goes. Default process.stdout. */
  readonly out?: (line: string) => void;
  /** Where progress and warnings go. Default process.stderr. */
  readonly err?: (line: string) => void;
  /** Stop early on SIGINT/SIGTERM. Default true. */
  readonly handleSignals?: boolean;
  /** The Redis client for push-back (producer limits, hot clients). Default ioredis. */
  readonly createRedis?: (url: string) => Redis;
}

// ---------------------------------------------------------------- validation

const NUMBER = /^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

const number = (min: number, max: number, expected: string, { minExclusive = false } = {}) =>
  z
    .string()
    .trim()
    .regex(NUMBER, expected)
    .transform(Number)
    .pipe(
      z
        .number()
        .finite(expected)
        .refine((n) => (minExclusive ? n > min : n >= min) && n <= max, expected),
    );

const whole = (min: number, max: number, what = '') =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `a whole number from ${min} to ${max}${what}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, `a whole number from ${min} to ${max}${what}`)
        .max(max, `a whole number from ${min} to ${max}${what}`),
    );

const shareSchema = number(0, 1, 'a share from 0 to 1 (e.g. 0.05)');

const list = (item: z.ZodString, expected: string) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item).min(1, expected));

const brokersSchema = list(
  z.string().regex(/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/, 'host:port[,host:port…]'),
  'host:port[,host:port…]',
);

const topicSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9._-]{1,249}$/, 'a Kafka topic name (1–249 letters, digits, ".", "_", "-")')
  .refine((s) => s !== '.' && s !== '..', 'a Kafka topic name other than "." and ".."');

const eventNamesSchema = list(
  z.string().regex(/^[^\s,]{1,100}$/, 'comma-separated event names without spaces'),
  'comma-separated event names without spaces',
);

/** Checks one option's value; throws OptionError naming the option, the value and what is expected. */
function check<T>(schema: z.ZodType<T>, option: string, raw: string, from?: string): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const expected = parsed.error.issues[0]?.message ?? 'a valid value';
  const source = from ? ` (from ${from})` : '';
  throw new OptionError(`${option} ${JSON.stringify(raw)}${source} is invalid: expected ${expected}`);
}

const firstTopic = (s: string | undefined): string | undefined =>
  s
    ?.split(',')
    .map((x) => x.trim())
    .find(Boolean);

/**
 * Turns the raw options (and environment defaults) into settings, or throws OptionError with
 * a single line naming the option, the value and what is expected.
 */
export function parseProduceOptions(raw: RawProduceOptions, env: Env = process.env): ProduceSettings {
  const brokers =
    raw.brokers !== undefined
      ? check(brokersSchema, '--brokers', raw.brokers)
      : env.KAFKA_BROKERS !== undefined
        ? check(brokersSchema, '--brokers', env.KAFKA_BROKERS, 'KAFKA_BROKERS')
        : ['localhost:9092'];

  const topic =
    raw.topic !== undefined
      ? check(topicSchema, '--topic', raw.topic)
      : env.INGEST_TOPICS !== undefined
        ? check(topicSchema, '--topic', firstTopic(env.INGEST_TOPICS) ?? env.INGEST_TOPICS, 'INGEST_TOPICS')
        : 'ingest.events';

  const ratePerSec = check(
    number(0, 1_000_000, 'a number greater than 0 and at most 1000000 (messages per second)', {
      minExclusive: true,
    }),
    '--rate',
    raw.rate ?? '1000',
  );

  if (raw.duration !== undefined && raw.count !== undefined) {
    throw new OptionError('--duration and --count cannot be used together: expected one of them');
  }
  const durationMs =
    raw.count === undefined
      ? check(
          number(0, 86_400, 'a number of seconds greater than 0 and at most 86400', { minExclusive: true }),
          '--duration',
          raw.duration ?? '10',
        ) * 1000
      : undefined;
  const count =
    raw.count !== undefined ? check(whole(1, 100_000_000, ' (messages)'), '--count', raw.count) : undefined;

  const clients = check(whole(1, 1_000_000), '--clients', raw.clients ?? '100');
  const profileShare = check(shareSchema, '--profile-share', raw.profileShare ?? '0.3');
  const duplicateShare = check(shareSchema, '--duplicate-share', raw.duplicateShare ?? '0.02');
  const poisonShare = check(shareSchema, '--poison-share', raw.poisonShare ?? '0.01');
  const hostileKeyShare = check(shareSchema, '--hostile-key-share', raw.hostileKeyShare ?? '0.01');
  if (duplicateShare + poisonShare > 1 || (duplicateShare > 0 && duplicateShare + poisonShare >= 1)) {
    throw new OptionError(
      `--duplicate-share ${duplicateShare} and --poison-share ${poisonShare} are invalid together: ` +
        'expected a sum below 1 (duplicates need original messages)',
    );
  }

  let skew: WorkloadOptions['skew'];
  if (raw.hotClients !== undefined || raw.hotShare !== undefined) {
    if (clients < 2) {
      throw new OptionError(
        `--hot-clients needs at least 2 clients: expected --clients 2 or more, got ${clients}`,
      );
    }
    const hotClients =
      raw.hotClients !== undefined
        ? check(whole(1, clients - 1, ` (fewer than --clients ${clients})`), '--hot-clients', raw.hotClients)
        : Math.min(3, clients - 1);
    const hotShare =
      raw.hotShare !== undefined
        ? check(
            number(0, 1, 'a share greater than 0 and at most 1 (e.g. 0.5)', { minExclusive: true }),
            '--hot-share',
            raw.hotShare,
          )
        : 0.5;
    skew = { hotClients, hotShare };
  }

  const seed = check(whole(0, 4_294_967_295), '--seed', raw.seed ?? '1');
  const createTopic =
    raw.createTopic !== undefined
      ? check(whole(1, 10_000, ' (partitions)'), '--create-topic', raw.createTopic)
      : undefined;

  const bytesSchema = whole(1024, 100 * 1024 * 1024, ' (bytes)');
  const maxMessageBytes =
    raw.maxMessageBytes !== undefined
      ? check(bytesSchema, '--max-message-bytes', raw.maxMessageBytes)
      : env.MAX_MESSAGE_BYTES !== undefined
        ? check(bytesSchema, '--max-message-bytes', env.MAX_MESSAGE_BYTES, 'MAX_MESSAGE_BYTES')
        : DEFAULT_MAX_MESSAGE_BYTES;

  const shuffleVersions =
    raw.shuffleVersions === undefined || raw.shuffleVersions === false
      ? false
      : raw.shuffleVersions === true
        ? 0.5
        : check(
            number(0, 1, 'a share of clients greater than 0 and at most 1 (e.g. 0.5)', {
              minExclusive: true,
            }),
            '--shuffle-versions',
            raw.shuffleVersions,
          );

  const eventNames =
    raw.eventNames !== undefined ? check(eventNamesSchema, '--event-names', raw.eventNames) : undefined;

  const redisUrlSchema = z
    .string()
    .trim()
    .refine((u) => {
      try {
        return ['redis:', 'rediss:'].includes(new URL(u).protocol);
      } catch {
        return false;
      }
    }, 'a URL starting with redis:// or rediss://');
  const redisUrl =
    raw.redisUrl !== undefined
      ? check(redisUrlSchema, '--redis-url', raw.redisUrl)
      : env.REDIS_URL !== undefined && env.REDIS_URL !== ''
        ? check(redisUrlSchema, '--redis-url', env.REDIS_URL, 'REDIS_URL')
        : undefined;
  const prefixSchema = z
    .string()
    .regex(/^\S{1,200}$/, 'a Redis key prefix of 1 to 200 characters without spaces');
  const keyPrefix =
    raw.controlKeyPrefix !== undefined
      ? check(prefixSchema, '--control-key-prefix', raw.controlKeyPrefix)
      : env.CONTROL_KEY_PREFIX !== undefined && env.CONTROL_KEY_PREFIX !== ''
        ? check(prefixSchema, '--control-key-prefix', env.CONTROL_KEY_PREFIX, 'CONTROL_KEY_PREFIX')
        : DEFAULT_CONTROL_KEY_PREFIX;
  const control =
    redisUrl !== undefined && raw.ignoreLimits !== true
      ? { redisUrl, keyPrefix, redisSecurity: loadRedisSecurity(env, redisUrl) }
      : undefined;

  return {
    brokers,
    topic,
    createTopic,
    workload: {
      seed,
      ratePerSec,
      ...(durationMs !== undefined ? { durationMs } : {}),
      ...(count !== undefined ? { count } : {}),
      clients,
      profileShare,
      duplicateShare,
      poisonShare,
      hostileKeyShare,
      ...(skew ? { skew } : {}),
      maxMessageBytes,
      shuffleVersions,
      ...(eventNames ? { eventNames } : {}),
    },
    json: raw.json === true,
    quiet: raw.quiet === true,
    control,
  };
}

// ---------------------------------------------------------------- command
