import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../../harness/prometheus-text.js';
import { BatchedHistogram } from '../../../src/metrics/batched-histogram.js';

const BOUNDS = [0.01, 0.05, 0.25, 1];
const HELP = 'a latency';

/** The same values through prom-client's own Histogram, one observe each: the reference. */
function referenceText(labelSets: Record<string, string>[], msPerSet: number[][]): Promise<string> {
  const registry = new Registry();
  const labelNames = Object.keys(labelSets[0] ?? {});
  const h = new Histogram({
    name: 'lat_seconds',
    help: HELP,
    buckets: BOUNDS,
    labelNames,
    registers: [registry],
  });
  labelSets.forEach((labels, i) => {
    if (labelNames.length > 0) h.zero(labels);
    for (const ms of msPerSet[i]!) if (Number.isFinite(ms)) h.observe(labels, ms > 0 ? ms / 1000 : 0);
  });
  return registry.metrics();
}

function batchedText(labelSets: Record<string, string>[], msPerSet: number[][]): Promise<string> {
  const registry = new Registry();
  const h = new BatchedHistogram('lat_seconds', HELP, BOUNDS, labelSets, registry);
  for (const [i, ms] of msPerSet.entries()) h.observeMs(i, ms);
  return registry.metrics();
}

describe('BatchedHistogram', () => {
  it('serialises exactly as a prom-client Histogram fed the same values, one at a time', async () => {
    const ms = [0, 10, 10.0001, 49, 50, 250, 251, 999, 1_000, 1_001, 60_000];
    expect(await batchedText([{}], [ms])).toBe(await referenceText([{}], [ms]));
  });

  it('serialises each label set as prom-client does, label sets with nothing observed at zero', async () => {
    const sets = [{ part: 'kafka' }, { part: 'worker' }, { part: 'idle' }];
    const ms = [[5, 70, 3_000], [20, 300, 300], []];
    expect(await batchedText(sets, ms)).toBe(await referenceText(sets, ms));
  });

  it('counts a negative latency (clock skew) as 0 s and leaves out what is not a number', async () => {
    const registry = new Registry();
    const h = new BatchedHistogram('lat_seconds', HELP, BOUNDS, [{}], registry);
    h.observeMs(0, [-500, Number.NaN, Number.POSITIVE_INFINITY, 40]);
    const text = parsePrometheusText(await registry.metrics());
    expect(sampleValue(text, 'lat_seconds_count')).toBe(2);
    expect(sampleValue(text, 'lat_seconds_sum')).toBeCloseTo(0.04);
    expect(sampleValue(text, 'lat_seconds_bucket', { le: '0.01' })).toBe(1);
    expect(sampleValue(text, 'lat_seconds_bucket', { le: '0.05' })).toBe(2);
  });

  it('adds batch after batch, and starts from zero after the registry resets it', async () => {
    const registry = new Registry();
    const h = new BatchedHistogram('lat_seconds', HELP, BOUNDS, [{}], registry);
    h.observeMs(0, [20]);
    h.observeMs(0, [30, 2_000]);
    let text = parsePrometheusText(await registry.metrics());
    expect(sampleValue(text, 'lat_seconds_count')).toBe(3);
    expect(sampleValue(text, 'lat_seconds_bucket', { le: '+Inf' })).toBe(3);
    expect(sampleValue(text, 'lat_seconds_bucket', { le: '1' })).toBe(2);
    registry.resetMetrics();
    text = parsePrometheusText(await registry.metrics());
    expect(sampleValue(text, 'lat_seconds_count')).toBe(0);
    expect(sampleValue(text, 'lat_seconds_bucket', { le: '+Inf' })).toBe(0);
  });

  it('refuses a label set it was not made with, and a name the registry already holds', () => {
    const registry = new Registry();
    const h = new BatchedHistogram('lat_seconds', HELP, BOUNDS, [{}], registry);
    expect(() => h.observeMs(1, [1])).toThrow(/lat_seconds has no label set 1/);
    expect(() => new BatchedHistogram('lat_seconds', HELP, BOUNDS, [{}], registry)).toThrow(
      /already been registered/,
    );
  });

  it('names the labels its label sets use, as prom-client metrics do', () => {
    const registry = new Registry();
    const h = new BatchedHistogram(
      'lat_seconds',
      HELP,
      BOUNDS,
      [{ part: 'kafka' }, { part: 'worker' }],
      registry,
    );
    expect(h.labelNames).toEqual(['part']);
    expect(new BatchedHistogram('other_seconds', HELP, BOUNDS, [{}], registry).labelNames).toEqual([]);
  });

  it('reads the same through the registry as JSON, labels and all', async () => {
    const registry = new Registry();
    const h = new BatchedHistogram('lat_seconds', HELP, BOUNDS, [{ part: 'kafka' }], registry);
    h.observeMs(0, [30]);
    const [metric] = await registry.getMetricsAsJSON();
    expect(metric).toMatchObject({ name: 'lat_seconds', type: 'histogram', help: HELP });
    expect(metric!.values).toContainEqual({
      labels: { le: 0.05, part: 'kafka' },
      value: 1,
      metricName: 'lat_seconds_bucket',
    });
  });
});
