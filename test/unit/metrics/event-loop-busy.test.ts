import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../../harness/prometheus-text.js';
import { eventLoopBusyCounter } from '../../../src/metrics/event-loop-busy.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';

const NAME = 'rxingest_nodejs_eventloop_busy_seconds_total';
const busy = async (registry: Registry) =>
  sampleValue(parsePrometheusText(await registry.metrics()), NAME) ?? Number.NaN;

/** Keeps the thread busy for `ms` without yielding. */
const spin = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('eventLoopBusyCounter', () => {
  it('grows by the time the thread was held, and not while it waits', async () => {
    const registry = new Registry();
    eventLoopBusyCounter(registry);
    const beforeSpin = await busy(registry);
    // Node counts a loop iteration once it ends: let the spin's turn finish before scraping.
    spin(300);
    await new Promise<void>((resolve) => setImmediate(resolve));
    const afterSpin = await busy(registry);
    const t0 = performance.now();
    await new Promise<void>((resolve) => setTimeout(resolve, 300));
    const idle = (performance.now() - t0) / 1000;
    const afterWait = await busy(registry);
    expect(afterSpin - beforeSpin).toBeGreaterThanOrEqual(0.29);
    // 300 ms of waiting on a timer adds far less than 300 ms of busy time.
    expect(afterWait - afterSpin).toBeLessThan(idle / 2);
  });

  it('counts from the start of the process, so a first scrape already has the busy time so far', async () => {
    const registry = new Registry();
    eventLoopBusyCounter(registry);
    expect(await busy(registry)).toBeCloseTo(performance.eventLoopUtilization().active / 1000, 0);
  });

  it('is served with the worker metrics when their Node metrics are on', async () => {
    const on = new WorkerMetrics({ defaultMetrics: true });
    const off = new WorkerMetrics({ defaultMetrics: false });
    expect(await busy(on.registry)).toBeGreaterThan(0);
    expect(on.registry.getSingleMetric(NAME)).toBeDefined();
    expect(off.registry.getSingleMetric(NAME)).toBeUndefined();
  });
});
