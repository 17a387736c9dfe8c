import type { ErrorClass } from '../model/message.js';
import type { OutcomeKind } from '../model/outcome.js';

/**
 * The words and scales the worker's metrics are made of: the label values each series may
 * carry (bounded, so that no id or message becomes a label), the histograms' buckets, and
 * the numbers a summary reads back. WorkerMetrics builds its series from these.
 */

/** The contract's breaker states, as the numbers `rxingest_breaker_state` carries. */
export const BREAKER_STATES = { closed: 0, 'half-open': 1, open: 2 } as const;
export type BreakerState = keyof typeof BREAKER_STATES;

/** What a retry was against; `reason` stays a short, bounded word (never an id or a message). */
export type RetryTarget = 'elasticsearch' | 'redis' | 'kafka';

export const OUTCOMES: readonly OutcomeKind[] = [
  'indexed',
  'duplicate',
  'stale',
  'dead-letter',
  'ignored',
  'deleted',
];
export const DEAD_LETTER_CLASSES: readonly ErrorClass[] = [
  'invalid-json',
  'schema',
  'too-large',
  'rejected',
  'tombstone',
];
/** Seconds; from a fast local round trip to a request that sat out a long timeout. */
export const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/**
 * Seconds from the message's own `ts` to indexed: milliseconds when caught up, minutes behind a
 * backlog; finer around 250 ms, so that a p99 near the target can be read from the buckets.
 */
export const E2E_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10, 20, 30, 60, 120, 300,
  900,
];

/** Label sets of the batched latency histograms, by their place in the list each was made with. */
export const UNLABELLED = 0;
export const KAFKA_PART = 0;
export const WORKER_PART = 1;

/** The calls a partition graph makes on its sinks, as `rxingest_stage_duration_seconds` names them. */
export const SINK_STAGES = [
  'redis-lookup',
  'write-events',
  'write-profiles',
  'delete-profiles',
  'redis-marks',
] as const;
export type SinkStage = (typeof SINK_STAGES)[number];
export type StageObserver = (stage: SinkStage, seconds: number) => void;

/** A partition as its series' labels name it. */
export interface PartitionLabels {
  readonly topic: string;
  readonly partition: string;
}

/** Plain numbers for a progress line or a summary (WorkerMetrics.snapshot). */
export interface MetricsSnapshot {
  recordsIn: number;
  indexed: number;
  duplicates: number;
  stale: number;
  deadLetters: number;
  ignored: number;
  deleted: number;
  triggers: number;
  commits: number;
  inFlight: number;
  lag: number;
}
