import { describe, expect, it } from 'vitest';
import { parseMetrics } from '../../../harness/prometheus-text.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';

describe('the benchmarks’ reading of a worker’s /metrics', () => {
  it('sums records done by outcome and reads the main thread’s busy seconds', async () => {
    const metrics = new WorkerMetrics({ defaultMetrics: true });
    metrics.recordsDone.inc({ outcome: 'indexed' }, 7);
    metrics.recordsDone.inc({ outcome: 'duplicate' }, 2);
    const m = parseMetrics(await metrics.registry.metrics());
    expect(m.done).toBe(9);
    expect(m.byOutcome).toMatchObject({ indexed: 7, duplicate: 2 });
    expect(m.loopBusySeconds).toBeGreaterThan(0);
    expect(m.loopBusySeconds).toBeLessThanOrEqual(process.uptime());
  });

  it('leaves the busy seconds unknown when a worker does not serve them', () => {
    expect(parseMetrics('rxingest_records_done_total{outcome="indexed"} 3\n').loopBusySeconds).toBeNaN();
  });
});
