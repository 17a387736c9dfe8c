import { z } from 'zod';
import { int, topicName } from './setting-types.js';
import type { Setting, SettingsGroup } from './settings-group.js';

/**
 * The push-back variables by group, each with its type, its default and a `.describe()` of
 * what it means; control-settings.ts turns them into ControlSettings.
 */

export type TopicPriority = 'high' | 'low';

const decimal = (expected: string, ok: (n: number) => boolean) =>
  z
    .string()
    .trim()
    .regex(/^(\d+(\.\d*)?|\.\d+)$/, expected)
    .transform(Number)
    .pipe(z.number().refine(ok, expected));

const PRIORITIES_EXPECTED =
  'comma-separated topic:priority pairs, priority high or low (e.g. orders:high,reviews:low)';

const priorities = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(
    z.array(
      z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,249}:(high|low)$/, PRIORITIES_EXPECTED)
        .transform((pair) => {
          const at = pair.lastIndexOf(':');
          return [pair.slice(0, at), pair.slice(at + 1) as TopicPriority] as const;
        }),
    ),
  );

const concurrency = {
  ES_CONCURRENCY_INITIAL: [
    int(1, 10_000).describe('The adaptive limit of Elasticsearch requests in flight, at start.'),
    '4',
  ],
  ES_CONCURRENCY_MIN: [int(1, 10_000).describe('The lowest the limit goes.'), '1'],
  ES_CONCURRENCY_MAX: [
    int(1, 10_000).describe('The highest the limit goes; equal to ES_CONCURRENCY_MIN: a fixed limit.'),
    '32',
  ],
  ES_CONCURRENCY_DECREASE: [
    decimal('a ratio between 0 and 1 (e.g. 0.9)', (n) => n > 0 && n < 1).describe(
      'Multiplicative decrease of the limit on backpressure (a 429 or 5xx, a timeout, a connection error, an item refused for load).',
    ),
    '0.9',
  ],
  ES_CONCURRENCY_RTT_DEVIATION: [
    decimal('a number of standard deviations from 0 to 100 (e.g. 2.5)', (n) => n >= 0 && n <= 100).describe(
      'A cycle whose round-trip time reaches the moving mean plus this many standard deviations counts as backpressure.',
    ),
    '2.5',
  ],
} as const satisfies Record<string, Setting>;

const breaker = {
  BREAKER_WINDOW_MS: [
    int(1_000, 3_600_000).describe('The sliding window the failure rate is measured over.'),
    '30000',
  ],
  BREAKER_MIN_REQUESTS: [
    int(1, 1_000_000).describe(
      'Requests the window needs before its rate can open the breaker; this many failures in a row open it whatever the window holds.',
    ),
    '5',
  ],
  BREAKER_FAILURE_RATE: [
    decimal('a share of failed requests above 0 and at most 1 (e.g. 0.5)', (n) => n > 0 && n <= 1).describe(
      'Share of failed requests in the window that opens the breaker.',
    ),
    '0.5',
  ],
  BREAKER_SLOW_CALL_MS: [
    int(0, 3_600_000).describe(
      'An Elasticsearch request still unanswered after this long counts as failed at that moment, so a frozen node opens the breaker without waiting for the request timeout. 0: off.',
    ),
    '10000',
  ],
  BREAKER_OPEN_MS: [
    int(100, 3_600_000).describe(
      'How long the breaker stays open before probing; doubles each time a probe fails.',
    ),
    '5000',
  ],
  BREAKER_OPEN_MAX_MS: [
    int(100, 3_600_000).describe('The longest the breaker stays open at a time.'),
    '60000',
  ],
  BREAKER_PROBES: [
    int(1, 1_000).describe('Requests let through while half-open; all must succeed to close it.'),
    '3',
  ],
  BREAKER_SILENCE_MS: [
    int(0, 3_600_000).describe(
      'Requests waiting with no answer from Elasticsearch for this long start a liveness check (a HEAD / on a connection of its own); 0: off. A slow cluster answers the check and keeps the breaker closed; a frozen one does not.',
    ),
    '1000',
  ],
  BREAKER_LIVENESS_TIMEOUT_MS: [
    int(100, 600_000).describe(
      'A liveness check unanswered this long opens the breaker at once, whatever the volume; it then goes half-open as soon as Elasticsearch answers again. A frozen cluster opens it within BREAKER_SILENCE_MS + this.',
    ),
    '2500',
  ],
} as const satisfies Record<string, Setting>;

const heap = {
  HEAP_PAUSE_RATIO: [
    decimal('a share of the heap limit above 0 and at most 1 (e.g. 0.7)', (n) => n > 0 && n <= 1).describe(
      "A major GC that leaves this share of V8's old-generation limit alive pauses intake on every partition. 1: off.",
    ),
    '0.7',
  ],
  HEAP_RESUME_RATIO: [
    decimal('a share of the heap limit above 0 and below 1 (e.g. 0.5)', (n) => n > 0 && n < 1).describe(
      'Intake resumes once the heap in use is at most this share of the limit, or once no record is in flight.',
    ),
    '0.5',
  ],
  HEAP_GROWTH_PERCENT: [
    int(0, 1_000).describe(
      "How far V8's old generation may grow past what the last major GC left alive before the next one, set at start for the whole process. 0: V8's own choice.",
    ),
    '100',
  ],
} as const satisfies Record<string, Setting>;

const shedding = {
  TOPIC_PRIORITIES: [
    priorities.describe(
      'topic:high|low pairs of INGEST_TOPICS; unlisted topics are high. Low topics are shed while the breaker is not closed or the high topics lag.',
    ),
    '',
  ],
  SHED_LAG_HIGH: [
    int(0, 1e12).describe("The high-priority topics' total lag that sheds the low ones. 0: never for lag."),
    '100000',
  ],
  SHED_LAG_LOW: [
    int(0, 1e12).describe('Lag at or below which shedding stops (with the breaker closed).'),
    '20000',
  ],
  SHED_MIN_MS: [int(0, 86_400_000).describe('Automatic shedding lasts at least this long.'), '30000'],
  CONTROL_TOPIC: [
    topicName.describe(
      'Compacted topic of the manual shed decisions (rxingest shed / unshed); created if missing.',
    ),
    'rxingest.control',
  ],
} as const satisfies Record<string, Setting>;

const producerLimits = {
  LAG_INTERVAL_MS: [
    int(100, 600_000).describe("How often the worker reads its group's lag from the broker."),
    '5000',
  ],
  PRODUCER_LIMIT_LAG_HIGH: [
    int(0, 1e12).describe("A topic's lag, growing, at which its producers get a rate limit. 0: off."),
    '50000',
  ],
  PRODUCER_LIMIT_LAG_LOW: [
    int(0, 1e12).describe('Lag at or below which the limit grows back and is then lifted.'),
    '10000',
  ],
  PRODUCER_LIMIT_HEADROOM: [
    decimal('a share from 0 to 0.9 (e.g. 0.1)', (n) => n >= 0 && n <= 0.9).describe(
      'The limit is the drain rate less this share, so that lag falls.',
    ),
    '0.1',
  ],
  PRODUCER_LIMIT_MIN_RATE: [
    int(1, 10_000_000).describe("The limit's floor, messages per second for the whole topic."),
    '10',
  ],
  PRODUCER_LIMIT_TTL_MS: [
    int(1_000, 3_600_000).describe(
      'A published limit expires unless refreshed within this (a dead worker lifts it).',
    ),
    '30000',
  ],
} as const satisfies Record<string, Setting>;

const hotClients = {
  HOT_CLIENT_ENTER_RATE: [
    int(0, 10_000_000).describe('Messages per second, over all workers, that make a client hot. 0: off.'),
    '1000',
  ],
  HOT_CLIENT_LEAVE_RATE: [
    int(0, 10_000_000).describe('Messages per second below which a hot client cools again.'),
    '500',
  ],
  HOT_CLIENT_SPREAD: [
    int(2, 10_000).describe("Partitions a hot client's messages are spread over by the producer library."),
    '4',
  ],
  HOT_CLIENT_SKETCH_SIZE: [
    int(8, 1_000_000).describe('Clients counted per topic and worker (bounded memory).'),
    '128',
  ],
  HOT_CLIENT_INTERVAL_MS: [
    int(1_000, 3_600_000).describe('Rates are measured over intervals this long.'),
    '10000',
  ],
  CONTROL_KEY_PREFIX: [
    z
      .string()
      .regex(/^\S{1,200}$/, 'a Redis key prefix of 1 to 200 characters without spaces')
      .describe('Prefix of the Redis keys of producer limits and hot sets; producers must use the same.'),
    'rxingest:control:',
  ],
} as const satisfies Record<string, Setting>;

/** The push-back variables, their types and defaults (spread into config.ts's schema). */
export const controlSchema = {
  ...concurrency,
  ...breaker,
  ...heap,
  ...shedding,
  ...producerLimits,
  ...hotClients,
};

export const controlGroups: readonly SettingsGroup[] = [
  {
    title: 'Adaptive concurrency',
    about: 'Tier 1 of push-back: one limit on the Elasticsearch requests in flight across the worker.',
    settings: concurrency,
  },
  {
    title: 'Circuit breaker',
    about: 'Around Elasticsearch and around Redis (the same settings; Redis has no slow-call rule).',
    settings: breaker,
  },
  { title: 'Memory', about: "Intake held while the live heap is near V8's limit.", settings: heap },
  {
    title: 'Priority shedding',
    about: 'Tier 3 of push-back: low-priority topics paused in favour of the others.',
    settings: shedding,
  },
  {
    title: 'Producer limits',
    about: "Tier 2 of push-back: a rate limit for a lagging topic's producers, published in Redis.",
    settings: producerLimits,
  },
  {
    title: 'Hot clients',
    about: 'A client far louder than the rest, spread over several partitions by the producer library.',
    settings: hotClients,
  },
];
