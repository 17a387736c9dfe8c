import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../../harness/prometheus-text.js';
import { PartitionCounts } from '../../../src/metrics/partition-counts.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import type { Done } from '../../../src/model/outcome.js';

const done = (kind: string, ts?: string, receivedAt?: number) =>
  ({
    entry: { outcome: { kind }, record: { receivedAt }, message: ts === undefined ? undefined : { ts } },
  }) as unknown as Done;

describe('PartitionCounts', () => {
  it('hands what it counted to the metrics once per flush, and nothing twice', async () => {
    const metrics = new WorkerMetrics({ defaultMetrics: false });
    const counts = new PartitionCounts(metrics);
    const read = async () => {
      const text = parsePrometheusText(await metrics.registry.metrics());
      return {
        in: sampleValue(text, 'rxingest_records_in_total'),
        indexed: sampleValue(text, 'rxingest_records_done_total', { outcome: 'indexed' }),
        duplicate: sampleValue(text, 'rxingest_records_done_total', { outcome: 'duplicate' }),
        latencies: sampleValue(text, 'rxingest_e2e_latency_seconds_count'),
      };
    };
    for (let i = 0; i < 3; i++) counts.tookIn();
    const ts = new Date(Date.now() - 50).toISOString();
    counts.finished([done('indexed', ts), done('indexed', ts), done('duplicate')]);
    expect((await read()).in).toBe(0);
    counts.flush();
    expect(await read()).toEqual({ in: 3, indexed: 2, duplicate: 1, latencies: 2 });
    counts.flush();
    expect(await read()).toEqual({ in: 3, indexed: 2, duplicate: 1, latencies: 2 });
  });

  it("splits each indexed record's latency at its fetch: Kafka's part and the worker's add up to the whole", async () => {
    const metrics = new WorkerMetrics({ defaultMetrics: false });
    const counts = new PartitionCounts(metrics);
    const now = Date.now();
    const ts = new Date(now - 60_000).toISOString();
    // Fetched 200 ms before now; one record from before the split existed (no receivedAt).
    counts.finished([done('indexed', ts, now - 200), done('indexed', ts), done('duplicate', ts, now - 200)]);
    counts.flush();
    const text = parsePrometheusText(await metrics.registry.metrics());
    const v = (name: string, labels: Record<string, string> = {}) =>
      sampleValue(text, name, labels) ?? Number.NaN;
    expect(v('rxingest_e2e_latency_seconds_count')).toBe(2);
    expect(v('rxingest_record_latency_seconds_count', { part: 'kafka' })).toBe(1);
    expect(v('rxingest_record_latency_seconds_count', { part: 'worker' })).toBe(1);
    const kafka = v('rxingest_record_latency_seconds_sum', { part: 'kafka' });
    const worker = v('rxingest_record_latency_seconds_sum', { part: 'worker' });
    expect(kafka).toBeCloseTo(59.8, 1);
    expect(worker).toBeGreaterThanOrEqual(0.2);
    expect(worker).toBeLessThan(1);
    // The same record's whole is in the e2e histogram beside the one without a split.
    expect(v('rxingest_e2e_latency_seconds_sum')).toBeGreaterThanOrEqual(2 * (kafka + worker) - 0.001);
  });
});
