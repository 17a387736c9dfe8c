/** The end-to-end bench's options, run context, targets and the shapes of what it measures. */

import type { Buckets } from '../../harness/prometheus-histograms.js';
import type { GraphSettings } from '../../src/config/config.js';
import type { SinkStage } from '../../src/metrics/metric-labels.js';
import type { LatencyResult } from '../lib/latency.js';
import type { kafkaClient, RunResources } from '../lib/stack.js';
import type { Summary } from '../lib/stats.js';
import type { cpuBetween, MemoryBreakdown, WorkerMetricsSample } from '../lib/worker.js';

export interface EndToEndOptions {
  readonly quick: boolean;
  readonly resultsDir: string;
  /** Which of 'e2e', 'sweep', 'burst' to run ('e2e' always runs first: the others need its rate). */
  readonly only: ReadonlySet<string>;
  /** performance.now() by which everything should be done (the burst's drain wait is capped by it). */
  readonly deadline: number;
  readonly cores: number;
  readonly log: (line: string) => void;
  /** How to start the worker (see BenchWorker). */
  readonly workerEntry?: readonly string[];
}

/** The targets: p99 at half load with the shipped defaults, peak RSS through the burst. */
export const P99_TARGET_MS = 250;
export const RSS_TARGET_MB = 256;
export const SWEEP = [50, 100, 200, 500, 1000, 2000];
export const QUICK_SWEEP = [100, 2000];
export const CLIENTS = 10_000;

export interface Ctx extends EndToEndOptions {
  readonly runId: string;
  readonly res: RunResources;
  readonly kafka: ReturnType<typeof kafkaClient>;
  readonly pids: Record<string, number | undefined>;
  readonly defaults: GraphSettings;
  readonly logDir: string;
  readonly profDir: string;
}

export interface NaiveResult {
  readonly count: number;
  readonly ms: number;
  readonly rate: number;
  readonly series: { t: number; done: number }[];
  readonly cpu: ReturnType<typeof cpuBetween>;
}

export interface WorkerPoint {
  readonly batchMax: number;
  readonly drained: boolean;
  readonly drainDone: number;
  readonly drainMs: number;
  readonly rate: number;
  readonly latency?: LatencyResult & {
    summary: Summary;
    offered: number;
    /** The latency run's time 0 on the worker's sample clock (`WorkerMetricsSample.t`). */
    sampleTimeOfStart: number;
  };
  /** The same phase in the worker's own histograms: every record, not a sample. */
  readonly ownView?: OwnView;
  readonly peakRssMb: number;
  readonly drainSamples: WorkerMetricsSample[];
  readonly liveSamples: WorkerMetricsSample[];
  readonly cpu: ReturnType<typeof cpuBetween>;
  /** CPU by process during the latency phase (half load). */
  readonly liveCpu: ReturnType<typeof cpuBetween> | undefined;
  readonly outcomes: Record<string, number>;
  readonly notes: string[];
  readonly memory: MemoryBreakdown | undefined;
}

/**
 * The worker's histograms over the latency phase: its `ts` → indexed latency of every record
 * (the target's own definition; `ts` is the planned send time, so the producer's send counts,
 * the bench's mark and poll do not), and its `_bulk` requests' durations: what is
 * Elasticsearch's share of the tail.
 */
export interface OwnView {
  readonly indexed: Buckets;
  readonly bulk: Buckets;
  /** The same latency split at the fetch: Kafka's part (`ts` → fetched) and the worker's (→ indexed). */
  readonly kafka: Buckets;
  readonly worker: Buckets;
  /** Each call of the graph's stages on Redis and Elasticsearch. */
  readonly stages: ReadonlyMap<SinkStage, Buckets>;
}

export interface HeapDiagnosis {
  readonly heapMb: number;
  readonly rate: number;
  readonly drained: boolean;
  readonly peakRssMb: number;
  readonly exit: number | string;
  readonly memory: MemoryBreakdown | undefined;
  readonly peakInFlight: number;
}

export interface DrainResult {
  readonly rate: number;
  readonly drained: boolean;
  readonly peakRssMb: number;
}

export interface BurstResult {
  readonly durationMs: number;
  readonly offered: number;
  /** Records the 10× plan holds; what the producer could not send within the burst is not sent. */
  readonly planned: number;
  readonly achieved: number;
  readonly sent: number;
  readonly burstMs: number;
  readonly backlogAtEnd: number;
  readonly drained: boolean;
  readonly drainMs: number;
  readonly peakRssMb: number;
  readonly peakInFlight: number;
  readonly samples: WorkerMetricsSample[];
  readonly produced: { t: number; sent: number }[];
  readonly burstStartT: number;
  readonly burstEndT: number;
  readonly producerMaxLagMs: number;
  readonly memory: MemoryBreakdown | undefined;
}
