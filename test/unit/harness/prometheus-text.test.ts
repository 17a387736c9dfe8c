import { describe, expect, it } from 'vitest';
import { parsePrometheusText, samples, sampleValue } from '../../../harness/prometheus-text.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';

describe('parsePrometheusText', () => {
  it('reads every line prom-client serves for the worker, its Node metrics’ NaN included', async () => {
    const metrics = new WorkerMetrics({ defaultMetrics: true });
    metrics.recordsDone.inc({ outcome: 'indexed' }, 3);
    const text = await metrics.registry.metrics();
    const parsed = parsePrometheusText(text);
    const sampleLines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(parsed.samples).toHaveLength(sampleLines.length);
    expect(parsed.types.get('rxingest_records_done_total')).toBe('counter');
    expect(sampleValue(parsed, 'rxingest_records_done_total', { outcome: 'indexed' })).toBe(3);
  });

  it('keeps the labels of every series of a histogram, `le` included', () => {
    const parsed = parsePrometheusText(
      [
        '# TYPE h histogram',
        'h_bucket{outcome="ok",le="0.1"} 1',
        'h_bucket{outcome="ok",le="+Inf"} 2',
        'h_sum{outcome="ok"} 0.3',
        'h_count{outcome="ok"} 2',
        'h_bucket{outcome="bad",le="+Inf"} 5',
        'h_count{outcome="bad"} 5',
      ].join('\n'),
    );
    expect(sampleValue(parsed, 'h_bucket', { outcome: 'bad', le: '+Inf' })).toBe(5);
    expect(samples(parsed, 'h_bucket', { outcome: 'ok' }).map((s) => s.labels.le)).toEqual(['0.1', '+Inf']);
    expect(parsed.types.get('h')).toBe('histogram');
  });

  it('unescapes label values and reads the last line without a newline', () => {
    const parsed = parsePrometheusText(
      '# HELP c a counter\nc{path="C:\\\\DIR",msg="a\\"b\\nc"} 3\nc{path="x"} 4 1395066363000',
    );
    expect(samples(parsed, 'c').map((s) => [s.labels, s.value])).toEqual([
      [{ path: 'C:\\DIR', msg: 'a"b\nc' }, 3],
      [{ path: 'x' }, 4],
    ]);
  });

  it('reads the special values and exponents Prometheus reads', () => {
    const parsed = parsePrometheusText('a NaN\nb +Inf\nc -Inf\nd 1.5e3\ne -0.25\nf Nan');
    expect(parsed.samples.map((s) => s.value)).toEqual([
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      1500,
      -0.25,
      Number.NaN,
    ]);
  });

  it.each([
    ['a sentence', 'this is garbage'],
    ['a value that is not a number', 'metric twelve'],
    ['an unclosed label set', 'metric{a="1" 3'],
    ['a label without quotes', 'metric{a=1} 3'],
    ['junk after the labels', 'metric{a="1" b} 3'],
    ['a label given twice', 'metric{a="1",a="2"} 3'],
  ])('throws, naming the line, on %s', (_, line) => {
    expect(() => parsePrometheusText(`ok 1\n${line}\n`)).toThrow(line);
  });
});
