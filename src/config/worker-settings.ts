import { z } from 'zod';
import { ENGINE_SETTINGS } from './engine-setting.js';
import { bool, int, topicName } from './setting-types.js';
import type { Setting, SettingsGroup } from './settings-group.js';

/**
 * The worker's own variables (push-back's are in control-settings.ts, secured connections in
 * security.ts), by group. A new setting goes into its group with its type, its default and a
 * `.describe()` saying what it means; loadConfig, docs/configuration.md and `--help` follow.
 */

const list = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string()).min(1, 'a comma-separated, non-empty list'));

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

const brokerList = list.pipe(
  z.array(z.string().regex(/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/, 'host:port')).min(1, 'host:port[,host:port…]'),
);

const kafka = {
  INGEST_TOPICS: [
    list
      .pipe(z.array(topicName))
      .describe('Input topics, comma-separated. They must exist, or appear within KAFKA_TOPIC_WAIT_MS.'),
    'ingest.events',
  ],
  INGEST_GROUP: [
    z
      .string()
      .trim()
      .min(1, 'a non-empty consumer group id')
      .describe('The consumer group. It also scopes the Redis marks and the manual shed decisions.'),
    'rxingest',
  ],
  KAFKA_BROKERS: [brokerList.describe('Bootstrap brokers, host:port[,host:port…].'), 'localhost:9092'],
  KAFKA_CLIENT_ID: [
    z.string().trim().min(1, 'a non-empty client id').describe('The kafkajs client id.'),
    'rxingest',
  ],
  KAFKA_SESSION_TIMEOUT_MS: [
    int(6_000, 300_000).describe(
      "Group session timeout of the ingestion consumer and of the control topic's consumer.",
    ),
    '30000',
  ],
  KAFKA_FROM_BEGINNING: [
    bool.describe(
      'Where a group with no committed offset starts: true from the beginning, false from the end.',
    ),
    'true',
  ],
  KAFKA_TOPIC_WAIT_MS: [
    int(0, 3_600_000).describe('How long start-up waits for missing input topics before it fails.'),
    '30000',
  ],
  KAFKA_MAX_BYTES_PER_PARTITION: [
    int(1024, 100 * 1024 * 1024).describe(
      "One fetch's size per partition; with HIGH_WATER_BYTES it bounds a partition's memory. With more than 4 × INTAKE_SHARE_PARTITIONS partitions in the input topics, it is scaled by 4 × INTAKE_SHARE_PARTITIONS ÷ their partitions (never below 128 KiB), as HIGH_WATER is: a partition takes a whole fetch in before its marks can pause it.",
    ),
    String(256 * 1024),
  ],
  DLQ_TOPIC: [topicName.describe('Dead letters (created if missing).'), 'ingest.dlq'],
  TRIGGERS_TOPIC: [topicName.describe('Trigger events (created if missing).'), 'ingest.triggers'],
  PROGRESS_TOPIC: [
    topicName.describe(
      'Compacted ledger of the highest offset ever committed per input partition (created if missing): what lets a rebuild by offset reset send no trigger or dead letter twice.',
    ),
    'ingest.progress',
  ],
  TRIGGER_RULES: [
    z
      .string()
      .describe(
        'Path of a JSON rules file ([{ "id", "when": { field: value }, "emit" }], `when` on type, name, clientId or id); empty: no triggers.',
      ),
    '',
  ],
} as const satisfies Record<string, Setting>;

const elasticsearch = {
  ES_NODE: [
    url(['http:', 'https:']).describe('The search cluster: Elasticsearch 8 or 9, or OpenSearch 2 or 3.'),
    'http://localhost:9200',
  ],
  ES_ENGINE: [
    z
      .enum(ENGINE_SETTINGS, `one of ${ENGINE_SETTINGS.join(', ')}`)
      .describe(
        'Which search engine ES_NODE is. auto asks the server at start (its product and major version decide the dialect of every request and index); a value names it instead, for a server that will not say (credentials without the cluster monitor privilege). See docs/search-engines.md.',
      ),
    'auto',
  ],
  ES_REQUEST_TIMEOUT_MS: [int(100, 600_000).describe('Timeout of each Elasticsearch request.'), '30000'],
  ES_MAX_CONNECTIONS: [int(1, 10_000).describe("Connections the client's pool may open per node."), '256'],
  PROFILE_CACHE_SIZE: [
    int(0, 10_000_000).describe(
      'Profiles remembered after a write or read (least recently used out), so that the next update of a client seen lately is written without reading it first. Never trusted as truth: a stale entry costs a 409 and a read. 0: off.',
    ),
    '0',
  ],
  PROFILES_INDEX: [
    indexName.describe(
      'The profiles index, created with its mapping if missing; an existing one whose mapping cannot hold the merge stops the start.',
    ),
    'profiles',
  ],
  EVENTS_INDEX: [
    eventsIndexName.describe(
      "The events index. A date pattern ({yyyy.MM.dd}, {yyyy.MM}, {yyyy}, {yyyy-MM}, {yyyy-MM-dd}) picks each event's index by its own ts in UTC, so a copy always meets its original; an index template carries the mapping.",
    ),
    'events',
  ],
  EVENTS_ILM_POLICY: [
    z
      .string()
      .trim()
      .regex(/^[^\s,*"\\<>|?/]{0,255}$/, 'an ILM policy name (or nothing)')
      .describe(
        'An ILM policy attached, through the template, to the indices of a date-pattern EVENTS_INDEX (a warning and no lifecycle where the cluster has no ILM).',
      ),
    '',
  ],
} as const satisfies Record<string, Setting>;

const redis = {
  REDIS_URL: [
    url(['redis:', 'rediss:']).describe(
      'Redis; rediss:// for TLS, the password in the URL (rediss://:password@host:6380).',
    ),
    'redis://localhost:6379',
  ],
  REDIS_KEY_PREFIX: [
    z
      .string()
      .describe(
        'Prefix of the owner marks: one hash per generation of PROCESSED_TTL_MS, <prefix><group>#<generation>.',
      ),
    'rxingest:processed:',
  ],
  PROCESSED_TTL_MS: [
    int(1_000, 365 * 24 * 3_600_000).describe(
      'How long an owner mark is found: between one and two of these. Later copies still go to Elasticsearch, which decides them.',
    ),
    String(3_600_000),
  ],
  REDIS_LOOKUP_BACKOFF_MS: [
    int(0, 600_000).describe(
      "Longest wait between a partition's owner lookups while they find no copy (50 ms, doubling); a lookup that finds one brings back a lookup per batch. Batches in a wait go to Elasticsearch unasked. 0: every batch is looked up.",
    ),
    '1000',
  ],
} as const satisfies Record<string, Setting>;

const graph = {
  MAX_MESSAGE_BYTES: [
    int(64, 100 * 1024 * 1024).describe('Larger record values are poison (dead letter class too-large).'),
    String(1024 * 1024),
  ],
  DEDUP_WINDOW_MS: [
    int(1, 24 * 3_600_000).describe('Ids seen again within this window are duplicates (in memory, bounded).'),
    '10000',
  ],
  CLIENT_IDLE_MS: [
    int(1, 24 * 3_600_000).describe(
      "With an enricher of one's own, an idle client's queue closes after this (the default enrich keeps none).",
    ),
    '30000',
  ],
  BATCH_MAX: [int(1, 100_000).describe('Entries per batch written to Elasticsearch.'), '500'],
  BATCH_MS: [int(1, 60_000).describe('A batch goes out this long after its first entry, if not full.'), '50'],
  BATCHES_IN_FLIGHT: [
    int(1, 64).describe('Batches of one partition written at once (a batch with a tombstone goes alone).'),
    '2',
  ],
  BATCH_JOIN_BYTES: [
    int(0, 256 * 1024 * 1024).describe(
      "Batches that wait while a partition's writes are busy go out as one, up to BATCH_MAX entries and this many bytes of keys and values. 0: off.",
    ),
    '0',
  ],
  HIGH_WATER: [
    int(1, 10_000_000).describe(
      "Records in a partition's graph that pause its intake; records taken in and not yet committed pause it at 4 × this.",
    ),
    '2000',
  ],
  LOW_WATER: [
    int(0, 10_000_000).describe(
      'Intake resumes at this many (below HIGH_WATER; 4 × for uncommitted records).',
    ),
    '1000',
  ],
  INTAKE_SHARE_PARTITIONS: [
    int(1, 1_024).describe(
      'HIGH_WATER, LOW_WATER and BATCHES_IN_FLIGHT are sized for this many partitions: with fewer assigned, each is scaled by this ÷ assigned, so that a worker with few partitions keeps as many records in flight as with this many; with more than 4 × this many, HIGH_WATER and LOW_WATER are scaled by 4 × this ÷ assigned (never below a BATCH_MAX), so that the records in flight stop growing with the partitions. HIGH_WATER_BYTES is not scaled. 1: never scaled.',
    ),
    '8',
  ],
  HIGH_WATER_BYTES: [
    int(64 * 1024, 4 * 1024 ** 3).describe(
      'Key and value bytes a partition has taken in and not committed that pause it too; it resumes below half.',
    ),
    String(16 * 1024 * 1024),
  ],
  COMMIT_INTERVAL_MS: [
    int(1, 60_000).describe(
      'Commit cadence by time. A partition that has gone quiet (all done, at least BATCH_MAX committable, nothing new for BATCH_MS) commits at once.',
    ),
    '500',
  ],
  COMMIT_EVERY: [
    int(1, 1_000_000).describe(
      'Commit cadence by records, whichever of time or records comes first; at most 4 × (HIGH_WATER − LOW_WATER).',
    ),
    '5000',
  ],
  RETRY_BASE_MS: [
    int(1, 60_000).describe(
      'The one retry policy, random() × min(RETRY_MAX_MS, base × 2^attempt), for Elasticsearch items, enrich, partition restarts and the Redis reconnect: its base.',
    ),
    '100',
  ],
  RETRY_MAX_MS: [int(1, 600_000).describe("The retry policy's longest backoff."), '10000'],
  TOMBSTONES: [
    z
      .enum(['dead-letter', 'ignore', 'delete'], 'one of dead-letter, ignore, delete')
      .describe(
        "What a record with a null value does: dead-letter (class tombstone), ignore (counted and committed), delete (deletes the profile of the client named by the key, in that client's order).",
      ),
    'dead-letter',
  ],
} as const satisfies Record<string, Setting>;

const processSettings = {
  SHUTDOWN_TIMEOUT_MS: [int(0, 600_000).describe('How long SIGTERM waits for in-flight work.'), '30000'],
  STALL_TIMEOUT_MS: [
    int(1_000, 24 * 3_600_000).describe(
      'A partition with lag or unfinished work and no commit for this long is logged and shown in rxingest_partition_stalled.',
    ),
    '120000',
  ],
  LOG_LEVEL: [
    z
      .enum(
        ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
        'one of fatal, error, warn, info, debug, trace, silent',
      )
      .describe('Level of the JSON log lines on standard output.'),
    'info',
  ],
  HTTP_HOST: [
    z
      .string()
      .trim()
      .min(1, 'a host name or address to listen on, e.g. 0.0.0.0')
      .describe('Address of the HTTP server (/metrics, /healthz, /readyz).'),
    '0.0.0.0',
  ],
  HTTP_PORT: [
    int(0, 65_535).describe(
      'Port of the HTTP server; 0 turns it off. METRICS_PORT, its deprecated name, is read when this is unset.',
    ),
    '9464',
  ],
} as const satisfies Record<string, Setting>;

/** Every variable of config.ts's part, in the order loadConfig checks them. */
export const workerSettings = { ...kafka, ...elasticsearch, ...redis, ...graph, ...processSettings };

export const workerGroups: readonly SettingsGroup[] = [
  {
    title: 'Kafka',
    about: 'Where records come from and where triggers, dead letters and progress go.',
    settings: kafka,
  },
  {
    title: 'Elasticsearch',
    about: 'The node, the indices and how the worker talks to them.',
    settings: elasticsearch,
  },
  {
    title: 'Redis',
    about: 'The owner marks that let known copies skip Elasticsearch. Redis only saves work.',
    settings: redis,
  },
  {
    title: 'Partition graph',
    about: 'What each partition graph is told: limits, batching, in-flight bounds, commits, retries.',
    settings: graph,
  },
  {
    title: 'Process',
    about: 'Shutdown, stall reports, logs and the HTTP server.',
    settings: processSettings,
  },
];
