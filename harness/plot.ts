/** Tiny, dependency-free SVG charts: a line chart and a grouped bar chart. */

const W = 800;
const H = 380;
const M = { top: 60, right: 24, bottom: 64, left: 76 };
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

const esc = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** Round tick steps (1, 2, 5 × 10^k) covering [lo, hi]. */
function ticks(lo: number, hi: number, count = 6): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push(Number(v.toPrecision(12)));
  return out;
}

function label(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  if (a >= 100 || v === 0) return String(Math.round(v));
  return String(Number(v.toPrecision(3)));
}

function frame(
  title: string,
  body: string,
  legend: { name: string; color: string; dash?: boolean }[],
): string {
  // Legend entries flow left to right, as wide as their text, wrapping to a second row.
  let x = M.left + 8;
  let row = 0;
  const items = legend
    .map((l) => {
      const width = 36 + l.name.length * 6.6;
      if (x + width > W - M.right && x > M.left + 8) {
        x = M.left + 8;
        row++;
      }
      const y = 38 + row * 16;
      const item =
        `<line x1="${x}" y1="${y}" x2="${x + 22}" y2="${y}" stroke="${l.color}" stroke-width="3"${l.dash ? ' stroke-dasharray="5 4"' : ''}/>` +
        `<text x="${x + 28}" y="${y + 4}" font-size="12" ${FONT}>${esc(l.name)}</text>`;
      x += width + 12;
      return item;
    })
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">` +
    `<rect width="100%" height="100%" fill="#fff"/>` +
    `<text x="${M.left}" y="20" font-size="15" font-weight="600" ${FONT}>${esc(title)}</text>` +
    items +
    body +
    '</svg>'
  );
}

export interface LineSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
}

export interface LineChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly LineSeries[];
  /** Logarithmic y axis (values ≤ 0 are clamped to the smallest positive value). */
  readonly yLog?: boolean;
  /** Logarithmic x axis. */
  readonly xLog?: boolean;
  /** Horizontal reference lines, e.g. a target. */
  readonly refs?: readonly { readonly y: number; readonly label: string }[];
  /** Show the points as dots as well. */
  readonly dots?: boolean;
}

export function lineChart(o: LineChartOptions): string {
  const pts = o.series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const refs = o.refs ?? [];
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  if (pts.length === 0) return frame(o.title, `<text x="${W / 2}" y="${H / 2}" ${FONT}>no data</text>`, []);
  const xs = pts.map((p) => p[0]);
  const ys = [...pts.map((p) => p[1]), ...refs.map((r) => r.y)];
  const minPos = (v: number[]) => Math.min(...v.filter((x) => x > 0), 1);
  const tx = o.xLog ? (v: number) => Math.log10(Math.max(v, minPos(xs))) : (v: number) => v;
  const ty = o.yLog ? (v: number) => Math.log10(Math.max(v, minPos(ys))) : (v: number) => v;
  let x0 = Math.min(...xs.map(tx));
  let x1 = Math.max(...xs.map(tx));
  let y0 = o.yLog ? Math.min(...ys.map(ty)) : Math.min(0, ...ys);
  let y1 = Math.max(...ys.map(ty));
  if (x1 === x0) x1 = x0 + 1;
  if (o.yLog) {
    y0 = Math.floor(y0);
    y1 = Math.ceil(y1 === y0 ? y0 + 1 : y1);
  } else {
    if (y1 === y0) y1 = y0 + 1;
    y1 *= 1.05;
  }
  if (o.xLog) {
    x0 = Math.floor(x0 * 10) / 10;
    x1 = Math.ceil(x1 * 10) / 10;
  }
  const sx = (v: number) => M.left + ((tx(v) - x0) / (x1 - x0)) * pw;
  const sy = (v: number) => M.top + ph - ((ty(v) - y0) / (y1 - y0)) * ph;

  const yTicks = o.yLog ? Array.from({ length: y1 - y0 + 1 }, (_, i) => 10 ** (y0 + i)) : ticks(y0, y1);
  const xTicks = o.xLog ? [...new Set(xs)].sort((a, b) => a - b) : ticks(x0, x1, 8);
  let body = '';
  for (const v of yTicks) {
    const y = sy(v);
    body += `<line x1="${M.left}" y1="${y}" x2="${M.left + pw}" y2="${y}" stroke="#e5e7eb"/>`;
    body += `<text x="${M.left - 6}" y="${y + 4}" font-size="11" text-anchor="end" ${FONT}>${label(v)}</text>`;
  }
  for (const v of xTicks) {
    const x = sx(v);
    body += `<line x1="${x}" y1="${M.top + ph}" x2="${x}" y2="${M.top + ph + 4}" stroke="#6b7280"/>`;
    body += `<text x="${x}" y="${M.top + ph + 18}" font-size="11" text-anchor="middle" ${FONT}>${label(v)}</text>`;
  }
  body += `<line x1="${M.left}" y1="${M.top + ph}" x2="${M.left + pw}" y2="${M.top + ph}" stroke="#6b7280"/>`;
  body += `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${M.top + ph}" stroke="#6b7280"/>`;
  body += `<text x="${M.left + pw / 2}" y="${H - 18}" font-size="12" text-anchor="middle" ${FONT}>${esc(o.xLabel)}</text>`;
  body += `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" font-size="12" text-anchor="middle" ${FONT}>${esc(o.yLabel)}</text>`;
  for (const r of refs) {
    const y = sy(r.y);
    body += `<line x1="${M.left}" y1="${y}" x2="${M.left + pw}" y2="${y}" stroke="#9ca3af" stroke-dasharray="2 3"/>`;
    body += `<text x="${M.left + pw - 4}" y="${y - 4}" font-size="11" text-anchor="end" fill="#6b7280" ${FONT}>${esc(r.label)}</text>`;
  }
  o.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const p = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (p.length === 0) return;
    const d = p.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join('');
    body += `<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 4"' : ''}/>`;
    if (o.dots || p.length < 12) {
      for (const [x, y] of p)
        body += `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3" fill="${color}"/>`;
    }
  });
  return frame(
    o.title,
    body,
    o.series.map((s, i) => ({ name: s.name, color: COLORS[i % COLORS.length]!, dash: s.dashed })),
  );
}

export interface BarChartOptions {
  readonly title: string;
  readonly categories: readonly string[];
  readonly series: readonly { readonly name: string; readonly values: readonly number[] }[];
  readonly unit: string;
  readonly yLog?: boolean;
}

export function barChart(o: BarChartOptions): string {
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const all = o.series.flatMap((s) => s.values).filter((v) => Number.isFinite(v) && (!o.yLog || v > 0));
  if (all.length === 0) return frame(o.title, `<text x="${W / 2}" y="${H / 2}" ${FONT}>no data</text>`, []);
  const lo = o.yLog ? Math.floor(Math.log10(Math.min(...all))) : 0;
  const hi = o.yLog ? Math.ceil(Math.log10(Math.max(...all))) : Math.max(...all) * 1.1;
  const t = (v: number) => (o.yLog ? Math.log10(Math.max(v, 10 ** lo)) : v);
  const sy = (v: number) => M.top + ph - ((t(v) - lo) / ((o.yLog ? hi : hi) - lo || 1)) * ph;
  const yTicks = o.yLog ? Array.from({ length: hi - lo + 1 }, (_, i) => 10 ** (lo + i)) : ticks(0, hi);
  let body = '';
  for (const v of yTicks) {
    const y = sy(v);
    body += `<line x1="${M.left}" y1="${y}" x2="${M.left + pw}" y2="${y}" stroke="#e5e7eb"/>`;
    body += `<text x="${M.left - 6}" y="${y + 4}" font-size="11" text-anchor="end" ${FONT}>${label(v)}</text>`;
  }
  const groupW = pw / o.categories.length;
  const barW = Math.min(48, (groupW * 0.8) / o.series.length);
  o.categories.forEach((c, ci) => {
    const gx = M.left + ci * groupW + (groupW - barW * o.series.length) / 2;
    o.series.forEach((s, si) => {
      const v = s.values[ci];
      if (v === undefined || !Number.isFinite(v)) return;
      const y = sy(v);
      const x = gx + si * barW;
      body += `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${(M.top + ph - y).toFixed(1)}" fill="${COLORS[si % COLORS.length]}"><title>${esc(`${s.name}, ${c}: ${label(v)} ${o.unit}`)}</title></rect>`;
      body += `<text x="${(x + barW / 2 - 1).toFixed(1)}" y="${(y - 3).toFixed(1)}" font-size="10" text-anchor="middle" ${FONT}>${label(v)}</text>`;
    });
    body += `<text x="${M.left + ci * groupW + groupW / 2}" y="${M.top + ph + 16}" font-size="11" text-anchor="middle" ${FONT}>${esc(c)}</text>`;
  });
  body += `<line x1="${M.left}" y1="${M.top + ph}" x2="${M.left + pw}" y2="${M.top + ph}" stroke="#6b7280"/>`;
  body += `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" font-size="12" text-anchor="middle" ${FONT}>${esc(o.unit)}</text>`;
  return frame(
    o.title,
    body,
    o.series.map((s, i) => ({ name: s.name, color: COLORS[i % COLORS.length]! })),
  );
}
