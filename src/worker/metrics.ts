import { Counter, Gauge, Registry } from 'prom-client';
import type { OutcomeKind } from '../model/outcome.js';

/**
 * The worker's metrics, in a registry of its own (no global default registry),
 * for Prometheus (`METRICS_PORT`) and for the demo's progress line.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  readonly recordsIn = new Counter({
    name: 'rxingest_records_in_total',
    help: 'Records taken from Kafka into a partition graph',
    registers: [this.registry],
  });
  readonly recordsDone = new Counter({
    name: 'rxingest_records_done_total',
    help: 'Records finished, by outcome (indexed, duplicate, stale, dead-letter)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly triggers = new Counter({
    name: 'rxingest_triggers_total',
    help: 'Trigger records published (committed with their offsets)',
    registers: [this.registry],
  });
  readonly commits = new Counter({
    name: 'rxingest_commits_total',
    help: 'Offset commits (Kafka transactions)',
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'rxingest_in_flight',
    help: 'Records inside partition graphs, not yet committable',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly lag = new Gauge({
    name: 'rxingest_consumer_lag',
    help: 'Records between the last fetched offset and the partition end, as last seen',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly paused = new Gauge({
    name: 'rxingest_partition_paused',
    help: '1 while a partition is paused for this reason (starting, backpressure, breaker, shed, stopping)',
    labelNames: ['topic', 'partition', 'reason'] as const,
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'rxingest_dead_letters_total',
    help: 'Dead letters published, by error class',
    labelNames: ['class'] as const,
    registers: [this.registry],
  });
  readonly stalled = new Gauge({
    name: 'rxingest_partition_stalled',
    help: '1 while a partition has lag or unfinished work and made no commit for STALL_TIMEOUT_MS',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly redisUp = new Gauge({
    name: 'rxingest_redis_up',
    help: '1 while Redis answers (it only saves work: ingestion goes on without it)',
    registers: [this.registry],
  });
  readonly restarts = new Counter({
    name: 'rxingest_partition_restarts_total',
    help: 'Partition graphs started again after a failure (fenced, commit failed) while still assigned',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** Plain numbers for a progress line or a summary. */
  async snapshot(): Promise<MetricsSnapshot> {
    const done = await this.recordsDone.get();
    const by = (k: OutcomeKind) => done.values.find((v) => v.labels.outcome === k)?.value ?? 0;
    const sum = async (g: Gauge) => (await g.get()).values.reduce((a, v) => a + v.value, 0);
    return {
      recordsIn: (await this.recordsIn.get()).values[0]?.value ?? 0,
      indexed: by('indexed'),
      duplicates: by('duplicate'),
      stale: by('stale'),
      deadLetters: by('dead-letter'),
      triggers: (await this.triggers.get()).values[0]?.value ?? 0,
      commits: (await this.commits.get()).values[0]?.value ?? 0,
      ignored: by('ignored'),
      deleted: by('deleted'),
      inFlight: await sum(this.inFlight),
      lag: await sum(this.lag),
    };
  }
}

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
