import type { LineSeries } from '../../harness/plot.js';
import type { PrometheusServer, PromSeries } from '../../harness/servers/prometheus.js';
import { type GrafanaDashboard, type GrafanaQuery, legend } from './grafana-queries.js';

export interface PanelData {
  /** Per panel, in the dashboard's order: its lines, named by their legends. */
  readonly lines: LineSeries[][];
  /** Per query: what Prometheus answered. */
  readonly answers: { readonly query: GrafanaQuery; readonly series: readonly PromSeries[] }[];
}

/**
 * Asks Prometheus (query_range, from `start` to `end` in unix seconds) for every query, and
 * turns the answers into the panels' lines, x in seconds since `start`. Points Prometheus
 * answers as NaN (a quantile of no observations) are left out of the lines, as Grafana leaves
 * a gap.
 */
export async function panelData(
  prometheus: PrometheusServer,
  dashboard: GrafanaDashboard,
  queries: readonly GrafanaQuery[],
  range: { readonly start: number; readonly end: number; readonly stepS: number },
): Promise<PanelData> {
  // Steps counted back from `end`, so that the last one is `end` itself and sees every scrape.
  const start = range.end - Math.floor((range.end - range.start) / range.stepS) * range.stepS;
  const lines: LineSeries[][] = dashboard.panels.map(() => []);
  const answers: PanelData['answers'] = [];
  for (const query of queries) {
    const series = await prometheus.queryRange(query.promql, start, range.end, range.stepS);
    answers.push({ query, series });
    const panel = dashboard.panels.findIndex((p) => p.title === query.panel);
    lines[panel]!.push(
      ...series.map((s) => ({
        name: legend(query.legendFormat, s.metric) || query.promql,
        points: s.values
          .filter(([, v]) => Number.isFinite(v))
          .map(([t, v]): [number, number] => [t - range.start, v]),
      })),
    );
  }
  return { lines, answers };
}
