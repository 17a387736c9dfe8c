import { describe, expect, it } from 'vitest';
import { type GrafanaDashboard, grafanaQueries, legend } from '../../../scripts/dashboard/grafana-queries.js';
import { renderPage } from '../../../scripts/dashboard/render-page.js';

const dashboard = (exprs: string[], templating?: GrafanaDashboard['templating']): GrafanaDashboard => ({
  title: 'rxingest',
  ...(templating ? { templating } : {}),
  panels: [
    {
      title: 'Throughput',
      fieldConfig: { defaults: { unit: 'ops' } },
      targets: exprs.map((expr) => ({ expr, legendFormat: '{{outcome}}' })),
    },
  ],
});

describe('grafanaQueries', () => {
  it("replaces Grafana's interval variables and the dashboard's own, as Grafana sends them", () => {
    const d = dashboard(
      [
        'sum by (outcome) (rate(rxingest_records_done_total{job="$job"}[$__rate_interval]))',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's ${var} syntax
        'sum(rate(rxingest_records_in_total{topic=~"${topic}"}[$__interval]))',
      ],
      {
        list: [
          { name: 'job', current: { value: 'rxingest' } },
          { name: 'topic', current: { value: ['a', 'b'] } },
        ],
      },
    );
    expect(grafanaQueries(d, { interval: '1m' }).map((q) => q.promql)).toEqual([
      'sum by (outcome) (rate(rxingest_records_done_total{job="rxingest"}[1m]))',
      'sum(rate(rxingest_records_in_total{topic=~"a|b"}[1m]))',
    ]);
  });

  it('shortens every range selector for a short recording when asked, and keeps the expression as written', () => {
    const [q] = grafanaQueries(dashboard(['sum(rate(rxingest_records_in_total[1m]))']), {
      interval: '10s',
      window: '10s',
    });
    expect(q).toEqual({
      panel: 'Throughput',
      legendFormat: '{{outcome}}',
      expr: 'sum(rate(rxingest_records_in_total[1m]))',
      promql: 'sum(rate(rxingest_records_in_total[10s]))',
    });
  });

  it('refuses a variable the dashboard does not define, rather than sending it to Prometheus', () => {
    expect(() =>
      grafanaQueries(dashboard(['sum(rxingest_in_flight{topic="$topic"})']), { interval: '1m' }),
    ).toThrow(/unknown Grafana variable \$topic/);
  });

  it("fills a legend template from a series' labels", () => {
    expect(legend('{{topic}}[{{ partition }}]', { topic: 'events', partition: '3' })).toBe('events[3]');
  });
});

describe('renderPage', () => {
  it('draws one self-contained chart per panel with its named lines', () => {
    const d = dashboard(['sum by (outcome) (rate(rxingest_records_done_total[1m]))']);
    const html = renderPage(
      d,
      [
        [
          {
            name: 'indexed',
            points: [
              [0, 1],
              [1, 2],
            ],
          },
        ],
      ],
      { subtitle: 'a <run>', method: 'queried' },
    );
    expect(html.match(/<svg /g)).toHaveLength(1);
    expect(html).toContain('>indexed<');
    expect(html).toContain('a &lt;run&gt;');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });
});
