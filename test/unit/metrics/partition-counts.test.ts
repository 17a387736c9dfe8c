import { describe, expect, it } from 'vitest';
import { PartitionCounts } from '../../../src/metrics/partition-counts.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import type { Done } from '../../../src/model/outcome.js';
import { parsePrometheusText, sampleValue } from '../../support/prometheus-text.js';

const done = (kind: string, ts?: string) =>
  ({ entry: { outcome: { kind }, message: ts === undefined ? undefined : { ts } } }) as unknown as Done;

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
});
