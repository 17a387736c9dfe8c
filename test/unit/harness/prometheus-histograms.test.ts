import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  bucketsBetween,
  histogramBuckets,
  observations,
  quantile,
  shareWithin,
} from '../../../harness/prometheus-histograms.js';

/** A registry like the worker's: one unlabelled histogram and one by `op`. */
function registry() {
  const r = new Registry();
  const e2e = new Histogram({ name: 'x_e2e_seconds', help: 'h', buckets: [0.1, 0.25, 0.5], registers: [r] });
  const req = new Histogram({
    name: 'x_request_seconds',
    help: 'h',
    labelNames: ['op'] as const,
    buckets: [0.05, 0.1],
    registers: [r],
  });
  return { r, e2e, req };
}

describe('histogramBuckets, from prom-client text', () => {
  it('reads the cumulative count of each bucket of one series, +Inf as Infinity', async () => {
    const { r, e2e } = registry();
    for (const v of [0.05, 0.2, 0.2, 0.3, 2]) e2e.observe(v);
    const b = histogramBuckets(await r.metrics(), 'x_e2e_seconds');
    expect([...b]).toEqual([
      [0.1, 1],
      [0.25, 3],
      [0.5, 4],
      [Number.POSITIVE_INFINITY, 5],
    ]);
    expect(observations(b)).toBe(5);
    expect(shareWithin(b, 0.25)).toBeCloseTo(0.6);
  });

  it('keeps only the series whose labels match', async () => {
    const { r, req } = registry();
    req.observe({ op: 'bulk' }, 0.04);
    req.observe({ op: 'bulk' }, 0.2);
    req.observe({ op: 'mget' }, 0.01);
    const bulk = histogramBuckets(await r.metrics(), 'x_request_seconds', { op: 'bulk' });
    expect(observations(bulk)).toBe(2);
    expect(shareWithin(bulk, 0.05)).toBe(0.5);
    // No label filter: the series are summed.
    expect(observations(histogramBuckets(await r.metrics(), 'x_request_seconds'))).toBe(3);
  });

  it('gives a phase its own observations, after minus before', async () => {
    const { r, e2e } = registry();
    e2e.observe(30); // a backlog's latency, before the phase
    const before = histogramBuckets(await r.metrics(), 'x_e2e_seconds');
    e2e.observe(0.08);
    e2e.observe(0.4);
    const phase = bucketsBetween(before, histogramBuckets(await r.metrics(), 'x_e2e_seconds'));
    expect(observations(phase)).toBe(2);
    expect(shareWithin(phase, 0.1)).toBe(0.5);
    expect(shareWithin(phase, 0.5)).toBe(1);
  });

  it('is NaN where it cannot say: no observations, or no such bucket', async () => {
    const { r, e2e } = registry();
    expect(shareWithin(histogramBuckets(await r.metrics(), 'x_e2e_seconds'), 0.25)).toBeNaN();
    e2e.observe(0.2);
    expect(shareWithin(histogramBuckets(await r.metrics(), 'x_e2e_seconds'), 0.3)).toBeNaN();
    expect(observations(histogramBuckets(await r.metrics(), 'x_missing_seconds'))).toBe(0);
  });
});

describe('quantile, as histogram_quantile estimates it', () => {
  it('interpolates within the bucket the rank falls in', async () => {
    const { r, e2e } = registry();
    // 10 observations: 2 ≤ 0.1, 6 more ≤ 0.25, 2 more ≤ 0.5.
    for (const v of [0.05, 0.05, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.4, 0.4]) e2e.observe(v);
    const b = histogramBuckets(await r.metrics(), 'x_e2e_seconds');
    // rank 5 of 10: 3 into the 6 of (0.1, 0.25]
    expect(quantile(b, 0.5)).toBeCloseTo(0.1 + 0.15 * (3 / 6));
    // rank 9.9: 1.9 into the 2 of (0.25, 0.5]
    expect(quantile(b, 0.99)).toBeCloseTo(0.25 + 0.25 * (1.9 / 2));
    // rank 1 of the first bucket, from 0
    expect(quantile(b, 0.1)).toBeCloseTo(0.05);
  });

  it('answers the highest finite bound past it, and NaN without observations', async () => {
    const { r, e2e } = registry();
    expect(quantile(histogramBuckets(await r.metrics(), 'x_e2e_seconds'), 0.5)).toBeNaN();
    for (const v of [0.05, 3, 4]) e2e.observe(v);
    expect(quantile(histogramBuckets(await r.metrics(), 'x_e2e_seconds'), 0.99)).toBe(0.5);
  });
});
