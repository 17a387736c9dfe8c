import { type LineSeries, lineChart } from '../../harness/plot.js';
import type { GrafanaDashboard } from './grafana-queries.js';

/** A panel's lines: each already named by its legend, points as [seconds into the run, value]. */
export type PanelLines = readonly LineSeries[];

export interface PageOptions {
  /** Shown under the title: what ran, where, when. */
  readonly subtitle: string;
  /** The second line: how the values were obtained. */
  readonly method: string;
}

const UNITS: Record<string, string> = {
  ops: 'per second',
  s: 'seconds',
  percentunit: 'share (0–1)',
  short: '',
};

/** One SVG chart per dashboard panel, from its lines (in the dashboard's panel order). */
export function panelCharts(dashboard: GrafanaDashboard, lines: readonly PanelLines[]): string[] {
  return dashboard.panels.map((panel, i) => {
    const unit = panel.fieldConfig?.defaults?.unit ?? 'short';
    return lineChart({
      title: panel.title,
      xLabel: 'seconds into the run',
      yLabel: UNITS[unit] ?? unit,
      series: [...(lines[i] ?? [])].sort((a, b) => a.name.localeCompare(b.name)),
    });
  });
}

/** A self-contained HTML page (inline SVG, no scripts, no network) of the dashboard's panels. */
export function renderPage(
  dashboard: GrafanaDashboard,
  lines: readonly PanelLines[],
  o: PageOptions,
): string {
  const charts = panelCharts(dashboard, lines);
  const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(dashboard.title)} dashboard (from Prometheus)</title>
<style>
  body { margin: 16px 20px; font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif; background: #f3f4f6; color: #111827; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  p { margin: 0 0 12px; font-size: 13px; color: #4b5563; }
  p.first { margin-bottom: 2px; }
  .grid { display: grid; grid-template-columns: repeat(3, 1fr); gap: 10px; }
  .grid svg { width: 100%; height: auto; border-radius: 6px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
</style></head>
<body>
<h1>${esc(dashboard.title)}: the Grafana dashboard's panels, queried from Prometheus</h1>
<p class="first">${esc(o.subtitle)}</p>
<p>${esc(o.method)}</p>
<div class="grid">
${charts.join('\n')}
</div>
</body></html>
`;
}
