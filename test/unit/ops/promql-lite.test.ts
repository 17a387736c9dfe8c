import { describe, expect, it } from 'vitest';
import {
  evaluate,
  histogramQuantile,
  legend,
  parseQuery,
  type Scrape,
} from '../../../scripts/dashboard/promql-lite.js';
import { renderPage } from '../../../scripts/dashboard/render-page.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import { parsePrometheusText } from '../../support/prometheus-text.js';

const scrape = (t: number, text: string): Scrape => ({ t, samples: parsePrometheusText(text).samples });

describe('promql-lite', () => {
  it('parses the dashboard shapes and refuses others', () => {
    expect(parseQuery('sum by (outcome) (rate(rxingest_records_done_total[1m]))')).toEqual({
      kind: 'rate',
      agg: 'sum',
      by: ['outcome'],
      metric: 'rxingest_records_done_total',
      windowS: 60,
    });
    expect(parseQuery('histogram_quantile(0.99, sum by (le, op) (rate(x_seconds_bucket[30s])))')).toEqual({
      kind: 'quantile',
      q: 0.99,
      by: ['op'],
      metric: 'x_seconds',
      windowS: 30,
    });
    expect(parseQuery('max(rxingest_redis_up)')).toMatchObject({ kind: 'instant', agg: 'max', by: [] });
    expect(() => parseQuery('rate(x[1m]) / 2')).toThrow(/not an expression this page can draw/);
  });

  it('computes rates per group over the window', () => {
    const scrapes = [
      scrape(0, 'c{o="a"} 0\nc{o="b"} 0'),
      scrape(1_000, 'c{o="a"} 10\nc{o="b"} 1'),
      scrape(2_000, 'c{o="a"} 30\nc{o="b"} 2'),
    ];
    const series = evaluate(parseQuery('sum by (o) (rate(c[1m]))'), scrapes, 1);
    expect(series).toEqual([
      {
        labels: { o: 'a' },
        points: [
          [1, 10],
          [2, 20],
        ],
      },
      {
        labels: { o: 'b' },
        points: [
          [1, 1],
          [2, 1],
        ],
      },
    ]);
  });

  it('interpolates quantiles inside buckets as Prometheus does', () => {
    const b = [
      { le: 0.1, count: 50 },
      { le: 0.5, count: 90 },
      { le: 1, count: 100 },
      { le: Number.POSITIVE_INFINITY, count: 100 },
    ];
    expect(histogramQuantile(0.5, b)).toBeCloseTo(0.1);
    expect(histogramQuantile(0.7, b)).toBeCloseTo(0.3);
    expect(histogramQuantile(0.95, b)).toBeCloseTo(0.75);
    expect(histogramQuantile(0.5, [{ le: Number.POSITIVE_INFINITY, count: 0 }])).toBeNaN();
  });

  it('fills legends from labels', () => {
    expect(legend('{{topic}}[{{partition}}]', { topic: 't', partition: '3' })).toBe('t[3]');
  });

  it('draws one chart per dashboard panel from a real registry scraped twice', async () => {
    const m = new WorkerMetrics({ defaultMetrics: false });
    const first = scrape(0, await m.registry.metrics());
    m.recordsIn.inc(100);
    m.recordsDone.inc({ outcome: 'indexed' }, 90);
    m.observeLatencies([50, 70, 900]);
    const second = scrape(1_000, await m.registry.metrics());
    const dashboard = {
      title: 'd',
      panels: [
        {
          title: 'Throughput',
          targets: [
            { expr: 'sum by (outcome) (rate(rxingest_records_done_total[1m]))', legendFormat: '{{outcome}}' },
          ],
        },
        {
          title: 'Latency',
          targets: [
            {
              expr: 'histogram_quantile(0.5, sum by (le) (rate(rxingest_e2e_latency_seconds_bucket[1m])))',
              legendFormat: 'p50',
            },
          ],
        },
      ],
    };
    const html = renderPage(dashboard, [first, second], { subtitle: 's', maxWindowS: 10 });
    expect(html.match(/<svg /g)).toHaveLength(2);
    expect(html).toContain('>indexed<');
    expect(html).toContain('>p50<');
    expect(html).not.toContain('no data');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });
});
