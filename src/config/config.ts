import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { TombstonePolicy } from '../model/message.js';
import type { TriggerRule } from '../model/trigger-rule.js';
import { ConfigError } from './config-error.js';
import type { EngineSetting } from './engine-setting.js';
import type { GraphSettings } from './graph-settings.js';
import type { Setting, SettingsGroup } from './settings-group.js';
import { workerGroups, workerSettings } from './worker-settings.js';

export type { GraphSettings, TombstonePolicy, TriggerRule };
export { ConfigError };

import {
  type ControlSettings,
  controlGroups,
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

/** Every variable the worker reads, its default and what it must look like. */
const schema = {
  ...workerSettings,
  ...controlSchema,
} as const satisfies Record<string, Setting>;

/** The groups of every variable above, as docs/configuration.md and `--help` show them. */
export const settingsGroups: readonly SettingsGroup[] = [...workerGroups, ...controlGroups];

type Raw = { [K in keyof typeof schema]: z.output<(typeof schema)[K][0]> };

/** The variables, their defaults and meanings, for `--help` and docs/configuration.md. */
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
      intakeSharePartitions: r.INTAKE_SHARE_PARTITIONS,
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
