import { type LineSeries, lineChart } from '../../bench/lib/plot.js';
import { evaluate, legend, parseQuery, type Scrape } from './promql-lite.js';

/** The parts of a Grafana dashboard JSON the page reads. */
export interface GrafanaDashboard {
  readonly title: string;
  readonly panels: readonly {
    readonly title: string;
    readonly description?: string;
    readonly fieldConfig?: { readonly defaults?: { readonly unit?: string } };
    readonly targets: readonly { readonly expr: string; readonly legendFormat?: string }[];
  }[];
}

export interface PageOptions {
  /** Shown under the title: what ran, where, when. */
  readonly subtitle: string;
  /** Rates and quantiles over at most this many seconds (a demo run is short; the dashboard uses 1 m). */
  readonly maxWindowS: number;
}

const UNITS: Record<string, string> = {
  ops: 'per second',
  s: 'seconds',
  percentunit: 'share (0–1)',
  short: '',
};

/** One SVG chart per dashboard panel, from the same expressions, evaluated over the scrapes. */
export function panelCharts(
  dashboard: GrafanaDashboard,
  scrapes: readonly Scrape[],
  maxWindowS: number,
): string[] {
  return dashboard.panels.map((panel) => {
    const series: LineSeries[] = panel.targets.flatMap((target) =>
      evaluate(parseQuery(target.expr), scrapes, maxWindowS).map((s) => ({
        name: legend(target.legendFormat ?? '', s.labels) || target.expr,
        points: s.points,
      })),
    );
    const unit = panel.fieldConfig?.defaults?.unit ?? 'short';
    return lineChart({
      title: panel.title,
      xLabel: 'seconds into the run',
      yLabel: UNITS[unit] ?? unit,
      series: series.sort((a, b) => a.name.localeCompare(b.name)),
    });
  });
}

/** A self-contained HTML page (inline SVG, no scripts, no network) of the dashboard's panels. */
export function renderPage(dashboard: GrafanaDashboard, scrapes: readonly Scrape[], o: PageOptions): string {
  const charts = panelCharts(dashboard, scrapes, o.maxWindowS);
  const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(dashboard.title)} dashboard (from scrapes)</title>
<style>
  body { margin: 16px 20px; font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; background: #f3f4f6; color: #111827; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  p { margin: 0 0 12px; font-size: 13px; color: #4b5563; }
  .grid { display: grid; grid-template-columns: repeat(3, 1fr); gap: 10px; }
  .grid svg { width: 100%; height: auto; border-radius: 6px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
</style></head>
<body>
<h1>${esc(dashboard.title)}: the Grafana dashboard's panels, drawn from ${scrapes.length} scrapes of /metrics</h1>
<p>${esc(o.subtitle)} Rates and quantiles over ${o.maxWindowS} s windows (the Grafana dashboard uses 1 m).</p>
<div class="grid">
${charts.join('\n')}
</div>
</body></html>
`;
}
