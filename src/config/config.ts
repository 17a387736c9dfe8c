import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { TombstonePolicy } from '../model/message.js';
import type { TriggerRule } from '../model/trigger-rule.js';
import { ConfigError } from './config-error.js';
import { ENGINE_SETTINGS, type EngineSetting } from './engine-setting.js';
import type { GraphSettings } from './graph-settings.js';

export type { GraphSettings, TombstonePolicy, TriggerRule };
export { ConfigError };

import {
  type ControlSettings,
  controlSchema,
  controlSettings,
  controlSettingsProblem,
} from './control-settings.js';
import {
  type ElasticsearchSecurity,
  type KafkaSecurity,
  loadElasticsearchSecurity,
  loadKafkaSecurity,
  loadRedisSecurity,
  type RedisSecurity,
  resolveSecretFiles,
  showValue,
} from './security.js';

/** The worker's settings, parsed and validated once at the edge (the environment) and passed in. */
export interface Config {
  readonly kafka: KafkaSecurity & {
    readonly brokers: string[];
    readonly clientId: string;
    readonly groupId: string;
    readonly topics: string[];
    readonly dlqTopic: string;
    readonly triggersTopic: string;
    /** The compacted ledger of the highest offset ever committed per input partition. */
    readonly progressTopic: string;
    readonly sessionTimeoutMs: number;
    readonly fromBeginning: boolean;
    /** How long start-up waits for missing input topics before it fails. */
    readonly topicWaitMs: number;
    /** Most bytes one fetch brings per partition: with HIGH_WATER, what bounds a partition's memory. */
    readonly maxBytesPerPartition: number;
  };
  readonly elasticsearch: ElasticsearchSecurity & {
    readonly node: string;
    /** Which search engine ES_NODE is: `auto` asks it at start; the others skip the question. */
    readonly engine: EngineSetting;
    readonly profilesIndex: string;
    readonly eventsIndex: string;
    /** An ILM policy for the indices of a date-pattern EVENTS_INDEX (attached through the template). */
    readonly eventsIlmPolicy: string | undefined;
    readonly requestTimeoutMs: number;
    /** Connections the client's pool may open per node (undici `connections`). */
    readonly maxConnections: number;
    /** Profiles remembered after a write so their next update skips the read (0: always read). */
    readonly profileCacheSize: number;
  };
  readonly redis: RedisSecurity & {
    /** May hold a password: show it only through redactUrl. */
    readonly url: string;
    readonly keyPrefix: string;
    readonly processedTtlMs: number;
  };
  readonly graph: GraphSettings;
  readonly triggerRules: TriggerRule[];
  readonly shutdownTimeoutMs: number;
  /** A partition with lag or unfinished work and no commit for this long is reported stalled. */
  readonly stallTimeoutMs: number;
  readonly logLevel: string;
  /** `/metrics`, `/healthz`, `/readyz`; port 0 turns the server off. */
  readonly http: { readonly host: string; readonly port: number };
  /** Push-back: adaptive concurrency, breaker, shedding, producer limits, hot clients. */
  readonly control: ControlSettings;
}

const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int(`a whole number from ${min} to ${max}`)
        .min(min, `a whole number from ${min} to ${max}`)
        .max(max, `a whole number from ${min} to ${max}`),
    );

const list = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string()).min(1, 'a comma-separated, non-empty list'));

const topicName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9._-]{1,249}$/, 'a Kafka topic name (letters, digits, ".", "_", "-")');

const indexName = z
  .string()
  .trim()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,254}$/,
    'an Elasticsearch index name (lowercase letters, digits, ".", "_", "-")',
  );

/**
 * An index name, or for events a date pattern chosen by the event's own `ts` (UTC):
 * `events-{yyyy.MM.dd}`, `events-{yyyy.MM}`, `events-{yyyy}` (contract, "Output: Elasticsearch").
 */
const eventsIndexName = z
  .string()
  .trim()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,200}(\{(yyyy|yyyy\.MM|yyyy\.MM\.dd|yyyy-MM|yyyy-MM-dd)\}[a-z0-9._-]{0,40})?$/,
    'an Elasticsearch index name (lowercase letters, digits, ".", "_", "-"), optionally with one date pattern such as {yyyy.MM.dd}, {yyyy.MM} or {yyyy}',
  );

const url = (protocols: string[]) =>
  z
    .string()
    .trim()
    .refine(
      (s) => {
        try {
          return protocols.includes(new URL(s).protocol);
        } catch {
          return false;
        }
      },
      `a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`,
    );

const bool = z.enum(['true', 'false', '1', '0'], 'true or false').transform((s) => s === 'true' || s === '1');

const brokerList = list.pipe(
  z.array(z.string().regex(/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/, 'host:port')).min(1, 'host:port[,host:port…]'),
);

/** Every variable the worker reads, its default and what it must look like. */
const schema = {
  INGEST_TOPICS: [list.pipe(z.array(topicName)), 'ingest.events'],
  INGEST_GROUP: [z.string().trim().min(1, 'a non-empty consumer group id'), 'rxingest'],
  KAFKA_BROKERS: [brokerList, 'localhost:9092'],
  KAFKA_CLIENT_ID: [z.string().trim().min(1, 'a non-empty client id'), 'rxingest'],
  KAFKA_SESSION_TIMEOUT_MS: [int(6_000, 300_000), '30000'],
  KAFKA_FROM_BEGINNING: [bool, 'true'],
  KAFKA_TOPIC_WAIT_MS: [int(0, 3_600_000), '30000'],
  KAFKA_MAX_BYTES_PER_PARTITION: [int(1024, 100 * 1024 * 1024), String(256 * 1024)],
  DLQ_TOPIC: [topicName, 'ingest.dlq'],
  TRIGGERS_TOPIC: [topicName, 'ingest.triggers'],
  PROGRESS_TOPIC: [topicName, 'ingest.progress'],
  TRIGGER_RULES: [z.string(), ''],
  ES_NODE: [url(['http:', 'https:']), 'http://localhost:9200'],
  // The server's product and major version, found out at start (`auto`); a value names it
  // instead, for a server that will not say (no cluster `monitor` privilege).
  ES_ENGINE: [z.enum(ENGINE_SETTINGS, `one of ${ENGINE_SETTINGS.join(', ')}`), 'auto'],
  ES_REQUEST_TIMEOUT_MS: [int(100, 600_000), '30000'],
  ES_MAX_CONNECTIONS: [int(1, 10_000), '256'],
  PROFILE_CACHE_SIZE: [int(0, 10_000_000), '0'],
  PROFILES_INDEX: [indexName, 'profiles'],
  EVENTS_INDEX: [eventsIndexName, 'events'],
  EVENTS_ILM_POLICY: [
    z
      .string()
      .trim()
      .regex(/^[^\s,*"\\<>|?/]{0,255}$/, 'an ILM policy name (or nothing)'),
    '',
  ],
  REDIS_URL: [url(['redis:', 'rediss:']), 'redis://localhost:6379'],
  REDIS_KEY_PREFIX: [z.string(), 'rxingest:processed:'],
  PROCESSED_TTL_MS: [int(1_000, 365 * 24 * 3_600_000), String(3_600_000)],
  REDIS_LOOKUP_BACKOFF_MS: [int(0, 600_000), '1000'],
  MAX_MESSAGE_BYTES: [int(64, 100 * 1024 * 1024), String(1024 * 1024)],
  DEDUP_WINDOW_MS: [int(1, 24 * 3_600_000), '10000'],
  CLIENT_IDLE_MS: [int(1, 24 * 3_600_000), '30000'],
  BATCH_MAX: [int(1, 100_000), '500'],
  BATCH_MS: [int(1, 60_000), '50'],
  BATCHES_IN_FLIGHT: [int(1, 64), '2'],
  BATCH_JOIN_BYTES: [int(0, 256 * 1024 * 1024), '0'],
  HIGH_WATER: [int(1, 10_000_000), '2000'],
  LOW_WATER: [int(0, 10_000_000), '1000'],
  HIGH_WATER_BYTES: [int(64 * 1024, 4 * 1024 ** 3), String(16 * 1024 * 1024)],
  COMMIT_INTERVAL_MS: [int(1, 60_000), '500'],
  COMMIT_EVERY: [int(1, 1_000_000), '5000'],
  RETRY_BASE_MS: [int(1, 60_000), '100'],
  RETRY_MAX_MS: [int(1, 600_000), '10000'],
  TOMBSTONES: [
    z.enum(['dead-letter', 'ignore', 'delete'], 'one of dead-letter, ignore, delete'),
    'dead-letter',
  ],
  SHUTDOWN_TIMEOUT_MS: [int(0, 600_000), '30000'],
  STALL_TIMEOUT_MS: [int(1_000, 24 * 3_600_000), '120000'],
  LOG_LEVEL: [
    z.enum(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'one of fatal, error, warn, info, debug, trace, silent',
    ),
    'info',
  ],
  HTTP_HOST: [z.string().trim().min(1, 'a host name or address to listen on, e.g. 0.0.0.0'), '0.0.0.0'],
  HTTP_PORT: [int(0, 65_535), '9464'],
  ...controlSchema,
} as const satisfies Record<string, readonly [z.ZodType, string]>;

type Raw = { [K in keyof typeof schema]: z.output<(typeof schema)[K][0]> };

/** The variables, their defaults and meanings, for `--help` and the README. */
export const configVariables = Object.fromEntries(Object.entries(schema).map(([k, [, d]]) => [k, d]));

const ruleSchema = z
  .array(
    z.object({
      id: z.string().regex(/^[^:]+$/, 'a rule id without ":"'),
      // Only events trigger (contract); these are the fields a rule can match on.
      when: z.partialRecord(
        z.enum(['type', 'name', 'clientId', 'id'], 'a field among type, name, clientId, id'),
        z.string(),
      ),
      emit: z.string().min(1),
    }),
  )
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    for (const r of rules) {
      if (seen.has(r.id))
        ctx.addIssue({ code: 'custom', message: `rule id "${r.id}" is used twice; ids must be unique` });
      seen.add(r.id);
    }
  });

/** Reads and validates the rules file named by TRIGGER_RULES. */
export function loadTriggerRules(path: string, read: (p: string) => string = (p) => readFileSync(p, 'utf8')) {
  if (path.trim() === '') return [];
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    throw new ConfigError(
      `TRIGGER_RULES=${JSON.stringify(path)}: cannot read the file (${(err as Error).message})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      `TRIGGER_RULES=${JSON.stringify(path)}: not valid JSON (${(err as Error).message})`,
    );
  }
  const parsed = ruleSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `TRIGGER_RULES=${JSON.stringify(path)}: expected [{ "id", "when": { field: value }, "emit" }], ` +
        `at ${issue.path.join('.') || 'top level'}: ${issue.message}` +
        (issue.path.includes('when') ? ' (a rule matches on type, name, clientId or id)' : ''),
    );
  }
  return parsed.data;
}

/** Parses the environment; a bad value throws a ConfigError: one line naming variable, value, expectation. */
export function loadConfig(
  envGiven: NodeJS.ProcessEnv = process.env,
  read: (p: string) => string = (p) => readFileSync(p, 'utf8'),
): Config {
  // <NAME>_FILE variants of the secrets (security.ts) become <NAME> before anything reads them.
  const env = resolveSecretFiles(envGiven, read);
  const raw = {} as Record<string, unknown>;
  for (const [name, [type, fallback]] of Object.entries(schema)) {
    const given = env[name];
    const value = given === undefined || given === '' ? fallback : given;
    const parsed = (type as z.ZodType).safeParse(value);
    if (!parsed.success) {
      throw new ConfigError(
        `${showValue(name, value)} is invalid: expected ${parsed.error.issues[0]?.message ?? 'a valid value'}`,
      );
    }
    raw[name] = parsed.data;
  }
  const r = raw as Raw;
  // Deprecated alias from before the HTTP server served more than /metrics.
  const metricsPort = env.METRICS_PORT?.trim();
  let httpPort = r.HTTP_PORT;
  if ((env.HTTP_PORT ?? '') === '' && metricsPort) {
    const parsed = schema.HTTP_PORT[0].safeParse(metricsPort);
    if (!parsed.success) {
      throw new ConfigError(
        `METRICS_PORT=${JSON.stringify(metricsPort)} is invalid: expected ${parsed.error.issues[0]?.message} (METRICS_PORT is deprecated: use HTTP_PORT)`,
      );
    }
    httpPort = parsed.data;
  }
  if (r.LOW_WATER >= r.HIGH_WATER) {
    throw new ConfigError(
      `LOW_WATER=${r.LOW_WATER} is invalid: expected a number below HIGH_WATER (${r.HIGH_WATER})`,
    );
  }
  if (r.RETRY_MAX_MS < r.RETRY_BASE_MS) {
    throw new ConfigError(
      `RETRY_MAX_MS=${r.RETRY_MAX_MS} is invalid: expected at least RETRY_BASE_MS (${r.RETRY_BASE_MS})`,
    );
  }
  const reserved = new Set([r.DLQ_TOPIC, r.TRIGGERS_TOPIC, r.PROGRESS_TOPIC]);
  const clash = r.INGEST_TOPICS.find((t) => reserved.has(t));
  if (clash) {
    throw new ConfigError(
      `INGEST_TOPICS=${JSON.stringify(r.INGEST_TOPICS.join(','))} is invalid: expected topics other than DLQ_TOPIC, TRIGGERS_TOPIC and PROGRESS_TOPIC (${clash})`,
    );
  }
  const kafkaSecurity = loadKafkaSecurity(env, read);
  const esSecurity = loadElasticsearchSecurity(env, r.ES_NODE, read);
  const redisSecurity = loadRedisSecurity(env, r.REDIS_URL, read);
  const controlProblem = controlSettingsProblem(r, {
    ingest: r.INGEST_TOPICS,
    dlq: r.DLQ_TOPIC,
    triggers: r.TRIGGERS_TOPIC,
  });
  if (controlProblem) throw new ConfigError(controlProblem);
  return {
    kafka: {
      ...kafkaSecurity,
      brokers: r.KAFKA_BROKERS,
      clientId: r.KAFKA_CLIENT_ID,
      groupId: r.INGEST_GROUP,
      topics: r.INGEST_TOPICS,
      dlqTopic: r.DLQ_TOPIC,
      triggersTopic: r.TRIGGERS_TOPIC,
      progressTopic: r.PROGRESS_TOPIC,
      sessionTimeoutMs: r.KAFKA_SESSION_TIMEOUT_MS,
      fromBeginning: r.KAFKA_FROM_BEGINNING,
      maxBytesPerPartition: r.KAFKA_MAX_BYTES_PER_PARTITION,
      topicWaitMs: r.KAFKA_TOPIC_WAIT_MS,
    },
    elasticsearch: {
      ...esSecurity,
      node: r.ES_NODE,
      engine: r.ES_ENGINE,
      profilesIndex: r.PROFILES_INDEX,
      eventsIndex: r.EVENTS_INDEX,
      eventsIlmPolicy: r.EVENTS_ILM_POLICY === '' ? undefined : r.EVENTS_ILM_POLICY,
      requestTimeoutMs: r.ES_REQUEST_TIMEOUT_MS,
      maxConnections: r.ES_MAX_CONNECTIONS,
      profileCacheSize: r.PROFILE_CACHE_SIZE,
    },
    redis: {
      ...redisSecurity,
      url: r.REDIS_URL,
      keyPrefix: r.REDIS_KEY_PREFIX,
      processedTtlMs: r.PROCESSED_TTL_MS,
    },
    graph: {
      maxMessageBytes: r.MAX_MESSAGE_BYTES,
      dedupWindowMs: r.DEDUP_WINDOW_MS,
      clientIdleMs: r.CLIENT_IDLE_MS,
      batchMax: r.BATCH_MAX,
      batchMs: r.BATCH_MS,
      batchesInFlight: r.BATCHES_IN_FLIGHT,
      batchJoinBytes: r.BATCH_JOIN_BYTES,
      redisLookupBackoffMs: r.REDIS_LOOKUP_BACKOFF_MS,
      highWater: r.HIGH_WATER,
      lowWater: r.LOW_WATER,
      highWaterBytes: r.HIGH_WATER_BYTES,
      commitIntervalMs: r.COMMIT_INTERVAL_MS,
      commitEvery: r.COMMIT_EVERY,
      retryBaseMs: r.RETRY_BASE_MS,
      retryMaxMs: r.RETRY_MAX_MS,
      tombstones: r.TOMBSTONES,
    },
    triggerRules: loadTriggerRules(r.TRIGGER_RULES, read),
    shutdownTimeoutMs: r.SHUTDOWN_TIMEOUT_MS,
    stallTimeoutMs: r.STALL_TIMEOUT_MS,
    logLevel: r.LOG_LEVEL,
    http: { host: r.HTTP_HOST, port: httpPort },
    control: controlSettings(r),
  };
}
