import type { z } from 'zod';
import type { controlSchema, TopicPriority } from './control-variables.js';

export { controlGroups, controlSchema } from './control-variables.js';
export type { TopicPriority };

/**
 * The push-back settings (adaptive concurrency, breaker, shedding, producer limits, hot
 * clients): their variables join the worker's schema in config.ts and are validated the
 * same way, one line naming the variable, the value and what is expected.
 */

/** The adaptive concurrency limit of Elasticsearch requests (AIMD), ES_CONCURRENCY_*. */
export interface AdaptiveConcurrencySettings {
  /** The limit at start. */
  readonly initial: number;
  /** Bounds of the limit. `min === max` gives a fixed limit (for sweeps and comparisons). */
  readonly min: number;
  readonly max: number;
  /** Multiplicative decrease on backpressure, in (0, 1). Vector: 0.9. */
  readonly decreaseRatio: number;
  /** A cycle whose mean RTT reaches `past mean + rttDeviationScale × σ` counts as backpressure. Vector: 2.5. */
  readonly rttDeviationScale: number;
  /** Weight of the newest cycle in the RTT moving mean and deviation, in (0, 1]. Vector: 0.4. */
  readonly ewmaAlpha: number;
}

/** Memory push-back, HEAP_*: shares of V8's heap limit. */
export interface HeapGuardSettings {
  /** A major GC that leaves this share of the limit alive holds intake, in (0, 1]. */
  readonly pauseRatio: number;
  /** Intake resumes once the heap in use is at most this share of the limit. */
  readonly resumeRatio: number;
}

/** The circuit breaker around Elasticsearch, BREAKER_*. */
export interface CircuitBreakerSettings {
  /** The sliding window the failure rate is measured over. */
  readonly windowMs: number;
  /**
   * Fewer requests than this in the window never open the breaker on their rate; this many
   * failures in a row open it whatever the window holds.
   */
  readonly minRequests: number;
  /** Share of failed requests in the window that opens it, in (0, 1]. */
  readonly failureRate: number;
  /**
   * A request still unanswered after this long counts as failed at that moment (0: off).
   * A frozen destination answers nothing, not even a timeout, for as long as the request
   * timeout: this is what opens the breaker within seconds anyway.
   */
  readonly slowCallMs: number;
  /** How long it stays open before probing; doubles each time a probe fails. */
  readonly openMs: number;
  /** The most it stays open at a time. */
  readonly openMaxMs: number;
  /** Requests let through while half-open; all must succeed to close. */
  readonly probes: number;
  /**
   * Requests waiting with no answer from the destination for this long start a liveness
   * check (0: off). Short, because a slow destination still answers the check and costs
   * only that one cheap request, while a frozen one must be found within seconds.
   */
  readonly silenceMs: number;
  /**
   * A liveness check unanswered this long means the destination answers nothing: the
   * breaker opens. Longer than a slow destination's worst answer to a trivial request.
   */
  readonly livenessTimeoutMs: number;
}

export interface ControlSettings {
  readonly concurrency: AdaptiveConcurrencySettings;
  /** Memory push-back: intake held while the live heap is near V8's limit (HEAP_*). */
  readonly heap: HeapGuardSettings;
  /** How far past what is alive V8's old generation may grow before the next major GC, in %; 0: V8's choice. */
  readonly heapGrowthPercent: number;
  readonly breaker: CircuitBreakerSettings;
  readonly shedding: {
    /** Topics not listed are `high`: only topics named `low` are ever shed automatically. */
    readonly priorities: ReadonlyMap<string, TopicPriority>;
    /** Lag of the high-priority topics (records) that starts shedding; 0: never for lag. */
    readonly lagHigh: number;
    /** … and below which shedding stops (with the breaker closed). */
    readonly lagLow: number;
    /** Automatic shedding lasts at least this long (no flapping). */
    readonly minShedMs: number;
    /** Compacted topic that carries the operators' shed/unshed decisions. */
    readonly controlTopic: string;
  };
  /** How often the lag monitor reads the group's lag. */
  readonly lagIntervalMs: number;
  readonly producerLimits: {
    /** Lag of a topic (records) above which its producers are limited; 0: off. */
    readonly lagHigh: number;
    /** … and below which the limit is lifted. */
    readonly lagLow: number;
    /** The limit is the drain rate × (1 − headroom), so that lag shrinks. */
    readonly headroom: number;
    /** The limit never goes below this (messages per second, whole topic). */
    readonly minRatePerSec: number;
    /** A published limit expires unless refreshed within this (a dead worker lifts it). */
    readonly ttlMs: number;
  };
  readonly hotClients: {
    /** Messages per second that make a client hot; 0: off. */
    readonly enterRatePerSec: number;
    /** … and below which it cools again. */
    readonly leaveRatePerSec: number;
    /** Partitions a hot client's messages are spread over. */
    readonly spread: number;
    /** Clients tracked per topic and worker (bounded memory). */
    readonly sketchSize: number;
    /** Rates are measured over intervals this long. */
    readonly intervalMs: number;
  };
  /** Redis keys for producer limits and hot sets start with this. */
  readonly keyPrefix: string;
}

type ControlRaw = { [K in keyof typeof controlSchema]: z.output<(typeof controlSchema)[K][0]> };

const show = (v: unknown) => JSON.stringify(String(v));

/**
 * The first problem among settings that depend on each other (or on the topics), as the
 * one line a user sees; undefined when there is none.
 */
export function controlSettingsProblem(
  r: ControlRaw,
  topics: { readonly ingest: readonly string[]; readonly dlq: string; readonly triggers: string },
): string | undefined {
  if (r.ES_CONCURRENCY_MIN > r.ES_CONCURRENCY_MAX)
    return `ES_CONCURRENCY_MIN=${show(r.ES_CONCURRENCY_MIN)} is invalid: expected at most ES_CONCURRENCY_MAX (${r.ES_CONCURRENCY_MAX})`;
  if (r.ES_CONCURRENCY_INITIAL < r.ES_CONCURRENCY_MIN || r.ES_CONCURRENCY_INITIAL > r.ES_CONCURRENCY_MAX)
    return `ES_CONCURRENCY_INITIAL=${show(r.ES_CONCURRENCY_INITIAL)} is invalid: expected a number from ES_CONCURRENCY_MIN to ES_CONCURRENCY_MAX (${r.ES_CONCURRENCY_MIN} to ${r.ES_CONCURRENCY_MAX})`;
  if (r.HEAP_RESUME_RATIO >= r.HEAP_PAUSE_RATIO)
    return `HEAP_RESUME_RATIO=${show(r.HEAP_RESUME_RATIO)} is invalid: expected a share below HEAP_PAUSE_RATIO (${r.HEAP_PAUSE_RATIO})`;
  if (r.BREAKER_OPEN_MAX_MS < r.BREAKER_OPEN_MS)
    return `BREAKER_OPEN_MAX_MS=${show(r.BREAKER_OPEN_MAX_MS)} is invalid: expected at least BREAKER_OPEN_MS (${r.BREAKER_OPEN_MS})`;
  const below = (low: keyof ControlRaw, high: keyof ControlRaw) =>
    (r[high] as number) > 0 && (r[low] as number) >= (r[high] as number)
      ? `${low}=${show(r[low])} is invalid: expected a number below ${high} (${r[high]})`
      : undefined;
  const order =
    below('SHED_LAG_LOW', 'SHED_LAG_HIGH') ??
    below('PRODUCER_LIMIT_LAG_LOW', 'PRODUCER_LIMIT_LAG_HIGH') ??
    below('HOT_CLIENT_LEAVE_RATE', 'HOT_CLIENT_ENTER_RATE');
  if (order) return order;
  const seen = new Set<string>();
  const given = r.TOPIC_PRIORITIES.map(([t, p]) => `${t}:${p}`).join(',');
  for (const [topic] of r.TOPIC_PRIORITIES) {
    if (seen.has(topic))
      return `TOPIC_PRIORITIES=${show(given)} is invalid: expected each topic once (${topic} is given twice)`;
    seen.add(topic);
    if (!topics.ingest.includes(topic))
      return `TOPIC_PRIORITIES=${show(given)} is invalid: expected topics of INGEST_TOPICS (${topic} is not one)`;
  }
  if (
    topics.ingest.includes(r.CONTROL_TOPIC) ||
    r.CONTROL_TOPIC === topics.dlq ||
    r.CONTROL_TOPIC === topics.triggers
  )
    return `CONTROL_TOPIC=${show(r.CONTROL_TOPIC)} is invalid: expected a topic other than the input topics, DLQ_TOPIC and TRIGGERS_TOPIC`;
  return undefined;
}

export function controlSettings(r: ControlRaw): ControlSettings {
  return {
    concurrency: {
      initial: r.ES_CONCURRENCY_INITIAL,
      min: r.ES_CONCURRENCY_MIN,
      max: r.ES_CONCURRENCY_MAX,
      decreaseRatio: r.ES_CONCURRENCY_DECREASE,
      rttDeviationScale: r.ES_CONCURRENCY_RTT_DEVIATION,
      ewmaAlpha: 0.4,
    },
    heap: { pauseRatio: r.HEAP_PAUSE_RATIO, resumeRatio: r.HEAP_RESUME_RATIO },
    heapGrowthPercent: r.HEAP_GROWTH_PERCENT,
    breaker: {
      windowMs: r.BREAKER_WINDOW_MS,
      minRequests: r.BREAKER_MIN_REQUESTS,
      failureRate: r.BREAKER_FAILURE_RATE,
      slowCallMs: r.BREAKER_SLOW_CALL_MS,
      openMs: r.BREAKER_OPEN_MS,
      openMaxMs: r.BREAKER_OPEN_MAX_MS,
      probes: r.BREAKER_PROBES,
      silenceMs: r.BREAKER_SILENCE_MS,
      livenessTimeoutMs: r.BREAKER_LIVENESS_TIMEOUT_MS,
    },
    shedding: {
      priorities: new Map(r.TOPIC_PRIORITIES),
      lagHigh: r.SHED_LAG_HIGH,
      lagLow: r.SHED_LAG_LOW,
      minShedMs: r.SHED_MIN_MS,
      controlTopic: r.CONTROL_TOPIC,
    },
    lagIntervalMs: r.LAG_INTERVAL_MS,
    producerLimits: {
      lagHigh: r.PRODUCER_LIMIT_LAG_HIGH,
      lagLow: r.PRODUCER_LIMIT_LAG_LOW,
      headroom: r.PRODUCER_LIMIT_HEADROOM,
      minRatePerSec: r.PRODUCER_LIMIT_MIN_RATE,
      ttlMs: r.PRODUCER_LIMIT_TTL_MS,
    },
    hotClients: {
      enterRatePerSec: r.HOT_CLIENT_ENTER_RATE,
      leaveRatePerSec: r.HOT_CLIENT_LEAVE_RATE,
      spread: r.HOT_CLIENT_SPREAD,
      sketchSize: r.HOT_CLIENT_SKETCH_SIZE,
      intervalMs: r.HOT_CLIENT_INTERVAL_MS,
    },
    keyPrefix: r.CONTROL_KEY_PREFIX,
  };
}
