/** The parts of a Grafana dashboard JSON that the page and the checks read. */
export interface GrafanaDashboard {
  readonly title: string;
  readonly templating?: {
    readonly list?: readonly { readonly name: string; readonly current?: { readonly value?: unknown } }[];
  };
  readonly panels: readonly {
    readonly title: string;
    readonly description?: string;
    readonly fieldConfig?: { readonly defaults?: { readonly unit?: string } };
    readonly targets: readonly { readonly expr: string; readonly legendFormat?: string }[];
  }[];
}

export interface GrafanaQuery {
  readonly panel: string;
  readonly legendFormat: string;
  /** As written in the dashboard. */
  readonly expr: string;
  /** As Prometheus gets it: Grafana's variables replaced. */
  readonly promql: string;
}

export interface Substitutions {
  /** What Grafana puts for $__rate_interval and $__interval (a PromQL duration: 1m, 10s). */
  readonly interval: string;
  /**
   * Every range selector's duration replaced by this one (`[1m]` → `[10s]`), for a recording
   * shorter than the dashboard's windows; the dashboard's own windows when omitted.
   */
  readonly window?: string;
}

/**
 * Each panel target's expression as Grafana would send it to Prometheus: its built-in interval
 * variables and the dashboard's own template variables (at their current value) replaced.
 */
export function grafanaQueries(dashboard: GrafanaDashboard, s: Substitutions): GrafanaQuery[] {
  const vars = new Map<string, string>([
    ['__rate_interval', s.interval],
    ['__interval', s.interval],
  ]);
  for (const v of dashboard.templating?.list ?? []) {
    const value = v.current?.value;
    vars.set(v.name, Array.isArray(value) ? value.join('|') : String(value ?? ''));
  }
  const substitute = (expr: string) => {
    const replaced = expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced?: string, bare?: string) => {
      const value = vars.get((braced ?? bare)!);
      if (value === undefined) throw new Error(`unknown Grafana variable ${whole} in: ${expr}`);
      return value;
    });
    return s.window === undefined ? replaced : replaced.replace(/\[[^\]:]+\]/g, `[${s.window}]`);
  };
  return dashboard.panels.flatMap((panel) =>
    panel.targets.map((t) => ({
      panel: panel.title,
      legendFormat: t.legendFormat ?? '',
      expr: t.expr,
      promql: substitute(t.expr),
    })),
  );
}

/** Grafana's legend template: `{{label}}` replaced by the series' label values. */
export const legend = (template: string, labels: Readonly<Record<string, string>>): string =>
  template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l: string) => labels[l] ?? '');
