import type { Done } from '../model/outcome.js';
import type { WorkerMetrics } from './worker-metrics.js';

const OUTCOMES = ['indexed', 'duplicate', 'stale', 'dead-letter', 'ignored', 'deleted'] as const;

/**
 * One partition's per-record figures, counted as plain numbers on the hot path and handed to
 * prom-client once per batch and commit (a labelled `inc` per record costs more than the
 * record's own work in the graph).
 */
export class PartitionCounts {
  private taken = 0;
  private readonly done: Record<(typeof OUTCOMES)[number] | 'skipped', number> = {
    indexed: 0,
    duplicate: 0,
    stale: 0,
    'dead-letter': 0,
    ignored: 0,
    deleted: 0,
    skipped: 0,
  };
  /** End-to-end latencies (ms) of records indexed since the last flush. */
  private readonly latenciesMs: number[] = [];
  /** Their two parts, for the records that know when they were fetched. */
  private readonly kafkaMs: number[] = [];
  private readonly workerMs: number[] = [];

  constructor(private readonly metrics: WorkerMetrics) {}

  tookIn(): void {
    this.taken++;
  }

  finished(batch: readonly Done[]): void {
    const now = Date.now();
    for (const d of batch) {
      const kind = d.entry.outcome.kind;
      this.done[kind]++;
      if (kind !== 'indexed' || d.entry.message === undefined) continue;
      const ts = Date.parse(d.entry.message.ts);
      this.latenciesMs.push(now - ts);
      const fetched = d.entry.record.receivedAt;
      if (fetched === undefined) continue;
      this.kafkaMs.push(fetched - ts);
      this.workerMs.push(now - fetched);
    }
  }

  flush(): void {
    const m = this.metrics;
    if (this.taken > 0) m.recordsIn.inc(this.taken);
    this.taken = 0;
    for (const kind of OUTCOMES) {
      if (this.done[kind] > 0) m.recordsDone.inc({ outcome: kind }, this.done[kind]);
      this.done[kind] = 0;
    }
    this.done.skipped = 0;
    m.observeLatencies(this.latenciesMs);
    m.observeLatencyParts(this.kafkaMs, this.workerMs);
    this.latenciesMs.length = 0;
    this.kafkaMs.length = 0;
    this.workerMs.length = 0;
  }
}
