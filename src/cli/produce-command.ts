import { Command } from 'commander';
import { Redis } from 'ioredis';
import { type ConfigResourceTypes, Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { z } from 'zod';
import { kafkaClientConfig, kafkaMisconfiguration } from '../clients/kafka.js';
import { ConfigError } from '../config/config.js';
import { type KafkaSecurity, loadKafkaSecurity } from '../config/security.js';
import { DEFAULT_CONTROL_KEY_PREFIX } from '../control/control-keys.js';
import { ProduceError, type ProduceProgress, type ProduceResult, runProducer } from '../generator/produce.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  describeWorkload,
  POISON_KINDS,
  type WorkloadOptions,
  type WorkloadShape,
  workloadRecords,
} from '../generator/workload.js';
import { createIngestProducer, type IngestProducerStats, RedisControlSource } from '../producer/index.js';

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
  readonly control: { readonly redisUrl: string; readonly keyPrefix: string } | undefined;
}

/** A bad option value; the message is the one line the user sees (after "error: "). */
export class OptionError extends Error {
  override name = 'OptionError';
}

type Env = Readonly<Record<string, string | undefined>>;

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
  const control = redisUrl !== undefined && raw.ignoreLimits !== true ? { redisUrl, keyPrefix } : undefined;

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

const USAGE_ERRORS = new Set([
  'commander.unknownOption',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.conflictingOption',
  'commander.excessArguments',
  'commander.invalidArgument',
  'commander.unknownCommand',
]);

const HELP_AFTER = `
Messages follow the ingestion contract (key = clientId, value = JSON with id, clientId,
type, version|name, ts, data). Shares are of all records sent: --duplicate-share re-sends an
earlier message with the same id and bytes 10 ms to 5 s later (a producer retry), and
--poison-share sends poison of every kind in rotation: invalid JSON, a missing field, a
wrong-typed field, oversize (over --max-message-bytes), __proto__/constructor/prototype keys
inside data, and a null value. The rest are profile updates (--profile-share of them, with
per-client versions 1, 2, 3, …) and events.

The same options and --seed produce the same bytes, message ids included: a second run with
the same seed is a pure replay (every message a duplicate). Pass another --seed for new data.

Oversize poison needs a topic that accepts records over --max-message-bytes: --create-topic
sets the topic's max.message.bytes accordingly; on an existing topic whose limit is too
small, oversize poison is left out (with a warning).

Push-back: with --redis-url (or REDIS_URL) the producer honours the rate limit the workers
publish for the topic when their consumer group falls behind (it then falls behind its own
plan, and says so), and spreads the clients the workers mark hot over several partitions.
With Redis unreachable it sends as without push-back. --ignore-limits turns it off.

Progress goes to stderr once a second (not with --quiet); the final summary goes to stdout,
as one JSON object with --json. SIGINT/SIGTERM stop early and still print the summary.
Exit codes: 0 done, 1 Kafka failure, 2 invalid option.

A secured Kafka takes the worker's variables: KAFKA_SSL, KAFKA_SSL_CA, KAFKA_SSL_CERT,
KAFKA_SSL_KEY, KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD (or a
<NAME>_FILE variant for the secrets).

Examples:
  rxingest produce --create-topic 8 --rate 2000 --duration 30
  rxingest produce --topic ingest.events --count 50000 --hot-clients 3 --hot-share 0.5 --seed 7
  rxingest produce --count 1000 --poison-share 0.1 --shuffle-versions --json
`;

/** The settings' Kafka client; kafkajs' own logging is off, errors are reported here. */
const kafkaConfig = (s: ProduceSettings): KafkaConfig =>
  kafkaClientConfig(
    { brokers: s.brokers, ...s.security },
    {
      clientId: 'rxingest-produce',
      logLevel: logLevel.NOTHING,
      connectionTimeout: 5_000,
      retry: { retries: 5, initialRetryTime: 200 },
    },
  );

/** kafkajs' ConfigResourceTypes.TOPIC (not importable by name from ESM: kafkajs' exports end in a spread). */
const TOPIC_RESOURCE = 2 as ConfigResourceTypes;

/** Bytes a record batch adds around one value (a generous bound). */
const BATCH_OVERHEAD = 512;

const formatSummary = (s: ProduceSettings, r: ProduceResult): string => {
  const seconds = (r.elapsedMs / 1000).toFixed(2);
  const kinds = `${r.sent.event} events, ${r.sent.profile} profiles, ${r.sent.duplicate} duplicates, ${r.sent.poison} poison`;
  const extra = [
    r.rejected > 0 ? `${r.rejected} refused by the broker as too large` : '',
    r.aborted ? 'stopped early' : '',
  ].filter(Boolean);
  return (
    `produced ${r.total} records to ${s.topic} in ${seconds} s (${Math.round(r.ratePerSec)} msg/s): ${kinds}` +
    (extra.length > 0 ? ` (${extra.join('; ')})` : '')
  );
};

const formatProgress = (p: ProduceProgress, planned: number, pushback?: IngestProducerStats): string => {
  const limit = pushback ? Object.values(pushback.limits)[0] : undefined;
  const throttled =
    limit !== undefined
      ? `, throttled to ${Math.round(limit)} msg/s (${pushback!.buffered.records} buffered)`
      : '';
  return `produce: ${p.total}/${planned} sent, ${Math.round(p.ratePerSec)} msg/s, ${Math.round(p.lagMs)} ms behind plan${throttled}`;
};

/** `rxingest produce`: sends a seeded, paced workload of contract messages to a Kafka topic. */
export function produceCommand(deps: ProduceCommandDeps = {}): Command {
  const cmd = new Command('produce');
  cmd
    .description(
      'send a deterministic, paced workload of ingestion messages (with duplicates and poison) to Kafka',
    )
    .option(
      '--brokers <list>',
      'Kafka brokers, host:port[,host:port…] (default: $KAFKA_BROKERS or localhost:9092)',
    )
    .option('--topic <name>', 'topic to send to (default: first of $INGEST_TOPICS or ingest.events)')
    .option('--rate <msgs>', 'messages per second (default: 1000)')
    .option('--duration <seconds>', 'how long to send (default: 10; not with --count)')
    .option('--count <n>', 'send exactly n messages (at --rate) instead of --duration')
    .option('--clients <n>', 'number of clients, ids c-0001… (default: 100)')
    .option('--profile-share <share>', 'share of original messages that are profile updates (default: 0.3)')
    .option('--duplicate-share <share>', 'share of records that re-send an earlier message (default: 0.02)')
    .option('--poison-share <share>', 'share of records that are poison (default: 0.01)')
    .option(
      '--hot-clients <n>',
      'skew: this many hot clients get --hot-share of the traffic (default: off; 3)',
    )
    .option('--hot-share <share>', 'skew: share of the traffic for the hot clients (default: off; 0.5)')
    .option('--seed <n>', 'PRNG seed, 0 to 4294967295: same seed, same bytes (default: 1)')
    .option('--create-topic <partitions>', 'create the topic with this many partitions if it is missing')
    .option(
      '--max-message-bytes <bytes>',
      'size oversize poison goes over (default: $MAX_MESSAGE_BYTES or 1048576)',
    )
    .option(
      '--shuffle-versions [share]',
      'send this share of clients’ profile updates out of version order (bare: 0.5; default: off)',
    )
    .option('--event-names <list>', 'comma-separated event names (default: signup,purchase,login,logout)')
    .option(
      '--redis-url <url>',
      'honour producer limits and hot clients the workers publish there (default: $REDIS_URL; none: off)',
    )
    .option(
      '--control-key-prefix <prefix>',
      'the workers’ CONTROL_KEY_PREFIX (default: $CONTROL_KEY_PREFIX or rxingest:control:)',
    )
    .option('--ignore-limits', 'do not read producer limits or hot clients, even with REDIS_URL set')
    .option('--json', 'print the final summary as one JSON object')
    .option('--quiet', 'no progress lines on stderr')
    .addHelpText('after', HELP_AFTER)
    .exitOverride((err) => {
      // Usage errors exit 2 like invalid values; help/version exit 0; anything else keeps its code.
      process.exit(err.exitCode !== 0 && USAGE_ERRORS.has(err.code) ? 2 : err.exitCode);
    })
    .action(async (raw: RawProduceOptions) => {
      const env = deps.env ?? process.env;
      const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
      const err = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));

      let settings: ProduceSettings;
      let shape: WorkloadShape;
      try {
        settings = { ...parseProduceOptions(raw, env), security: loadKafkaSecurity(env) };
        shape = describeWorkload(settings.workload);
      } catch (e) {
        if (e instanceof OptionError || e instanceof RangeError || e instanceof ConfigError) {
          return cmd.error(`error: ${e.message}`, { exitCode: 2, code: 'rxingest.invalidOption' });
        }
        throw e;
      }

      try {
        const result = await produce(settings, shape, deps, err);
        if (settings.json) {
          out(
            JSON.stringify({
              topic: settings.topic,
              brokers: settings.brokers,
              seed: settings.workload.seed,
              planned: {
                total: shape.total,
                originals: shape.originals,
                duplicates: shape.duplicates,
                poison: shape.poison,
                durationMs: shape.durationMs,
              },
              ...result.summary,
              oversizeLeftOut: result.oversizeLeftOut,
              ...(result.pushback ? { pushback: result.pushback } : {}),
            }),
          );
        } else {
          out(formatSummary(settings, result.summary));
        }
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        if (e instanceof ProduceError) {
          err(formatSummary(settings, { ...e.result, aborted: true }));
        }
        return cmd.error(`error: ${message}`, { exitCode: 1, code: 'rxingest.produceFailed' });
      }
    });
  return cmd;
}

async function produce(
  settings: ProduceSettings,
  shape: WorkloadShape,
  deps: ProduceCommandDeps,
  err: (line: string) => void,
): Promise<{ summary: ProduceResult; oversizeLeftOut: boolean; pushback?: PushbackSummary }> {
  const kafka = (deps.createKafka ?? ((c) => new Kafka(c)))(kafkaConfig(settings));
  const { topic } = settings;
  const maxBytes = settings.workload.maxMessageBytes;
  const where = `${topic} at ${settings.brokers.join(',')}`;

  // The topic: create it (with room for oversize poison) or make sure it exists.
  let oversizeLeftOut = false;
  let missing = false;
  const admin = kafka.admin();
  try {
    await admin.connect();
    if (settings.createTopic !== undefined) {
      const created = await admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: settings.createTopic,
            configEntries: [{ name: 'max.message.bytes', value: String(maxBytes + 1024 * 1024) }],
          },
        ],
      });
      if (!settings.quiet) {
        err(
          created
            ? `produce: created ${topic} with ${settings.createTopic} partitions`
            : `produce: ${topic} exists`,
        );
      }
    }
    const topics = await admin.listTopics();
    if (!topics.includes(topic)) {
      missing = true;
    }
    if (!missing && shape.poison > 0) {
      const limit = await topicMaxMessageBytes(admin, topic);
      if (limit !== undefined && limit < maxBytes + 1024 + BATCH_OVERHEAD) {
        oversizeLeftOut = true;
        err(
          `produce: warning: ${topic} takes records up to ${limit} bytes (max.message.bytes), too few for ` +
            `oversize poison over --max-message-bytes ${maxBytes}: leaving oversize poison out ` +
            '(raise the topic’s max.message.bytes, or create it with --create-topic)',
        );
      }
    }
  } catch (e) {
    // A wrong password or an untrusted certificate: say that, not kafkajs' retry story.
    const misconfigured = kafkaMisconfiguration({ brokers: settings.brokers, ...settings.security }, e);
    if (misconfigured !== undefined) throw new Error(misconfigured, { cause: e });
    throw new Error(`Kafka admin on ${where}: ${(e as Error).message}`, { cause: e });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  if (missing)
    throw new Error(`topic ${where} does not exist: create it, or pass --create-topic <partitions>`);

  const workload = oversizeLeftOut
    ? { ...settings.workload, poisonKinds: POISON_KINDS.filter((k) => k !== 'oversize') }
    : settings.workload;

  const redis = settings.control ? (deps.createRedis ?? defaultRedis)(settings.control.redisUrl) : undefined;
  const control =
    redis && settings.control
      ? new RedisControlSource(redis, {
          keyPrefix: settings.control.keyPrefix,
          onStatus: (e) =>
            err(
              e
                ? `produce: warning: cannot read producer limits from Redis (${e.message}); sending without them`
                : 'produce: reading producer limits from Redis again',
            ),
        })
      : undefined;
  let limited = false;
  const { producer: ingest, kafkaProducer: producer } = createIngestProducer(kafka, {
    ...(control ? { control } : {}),
    onLimit: (_, rate) => {
      if (rate !== undefined) limited = true;
      if (!settings.quiet)
        err(
          rate === undefined
            ? 'produce: producer limit lifted'
            : `produce: throttled to ${Math.round(rate)} msg/s by the workers’ lag monitor`,
        );
    },
    producerConfig: {
      // Idempotent: a retried send is not written twice, so only the planned duplicates exist.
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    },
  });
  const controller = new AbortController();
  const stop = () => controller.abort();
  const handleSignals = deps.handleSignals ?? true;
  if (handleSignals) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  try {
    try {
      await producer.connect();
    } catch (e) {
      throw new Error(`cannot connect to Kafka at ${settings.brokers.join(',')}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (redis?.status === 'wait') {
      await redis.connect().catch(() => undefined); // unreachable: the control source says so once
    }
    // Read the limit and the hot clients before the first send.
    control?.watch(topic);
    await control?.refresh();
    const summary = await runProducer(
      { topic, records: workloadRecords(workload), signal: controller.signal },
      {
        producer: ingest,
        onProgress: settings.quiet ? undefined : (p) => err(formatProgress(p, shape.total, ingest.stats())),
        onRejected: (r) =>
          err(
            `produce: warning: the broker refused a ${r.value?.length ?? 0}-byte ${r.kind} record as too large`,
          ),
      },
    );
    const stats = ingest.stats();
    return {
      summary,
      oversizeLeftOut,
      ...(control
        ? {
            pushback: {
              limited,
              throttledMs: Math.round(stats.throttledMs),
              maxBufferedRecords: stats.maxBufferedRecords,
            },
          }
        : {}),
    };
  } finally {
    if (handleSignals) {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    await control?.close();
    redis?.disconnect();
    await producer.disconnect().catch(() => undefined);
  }
}

/** What push-back did to a run: whether it was limited, how long it waited for tokens, the most it buffered. */
interface PushbackSummary {
  readonly limited: boolean;
  readonly throttledMs: number;
  readonly maxBufferedRecords: number;
}

const defaultRedis = (url: string) =>
  new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    // ioredis reports every failed reconnect as an 'error' event: the control source says it once.
  }).on('error', () => undefined);

async function topicMaxMessageBytes(
  admin: ReturnType<Kafka['admin']>,
  topic: string,
): Promise<number | undefined> {
  try {
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: TOPIC_RESOURCE, name: topic, configNames: ['max.message.bytes'] }],
    });
    const value = res.resources[0]?.configEntries.find(
      (c) => c.configName === 'max.message.bytes',
    )?.configValue;
    const n = Number(value);
    return value !== undefined && Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined; // Unknown: send anyway; a refused record is counted, not fatal.
  }
}
