/**
 * Runs `rxingest demo` with the worker's HTTP server on and a Prometheus of its own (Debian's
 * `prometheus`, installed as root when missing) scraping the worker's /metrics every second,
 * then asks that Prometheus (query_range) for every panel query of the Grafana dashboard and
 * draws the answers into a self-contained HTML page, then (with --png) a screenshot of it with
 * headless Chromium. Grafana itself is not needed; Prometheus evaluates the PromQL.
 *
 *   npx tsx scripts/dashboard/record-demo.ts [--rate 2000] [--duration 60] [--window-s 10] [--png docs/dashboard.png] [-- demo options]
 *
 * --window-s: every range selector ([1m]) becomes this long, as a demo is short.
 * Prometheus's config, TSDB and log, the demo's log and the page go to .stack/dashboard/ (not committed).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensurePrometheus } from '../../harness/debian-package.js';
import { freePort } from '../../harness/ports.js';
import { PrometheusServer } from '../../harness/servers/prometheus.js';
import { spawnWorker } from '../../harness/worker/process.js';
import { type GrafanaDashboard, grafanaQueries } from './grafana-queries.js';
import { panelData } from './panel-data.js';
import { renderPage } from './render-page.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rate: { type: 'string', default: '2000' },
    duration: { type: 'string', default: '60' },
    png: { type: 'string' },
    'window-s': { type: 'string', default: '10' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    readFileSync(fileURLToPath(import.meta.url), 'utf8')
      .split('*/')[0]!
      .replace(/^\/\*\*?/, ''),
  );
  process.exit(0);
}

const outDir = join(root, '.stack', 'dashboard');
mkdirSync(outDir, { recursive: true });
await ensurePrometheus();
const port = await freePort();
const promDir = join(outDir, 'prometheus');
rmSync(promDir, { recursive: true, force: true });
const prometheus = await PrometheusServer.start({
  targets: [`127.0.0.1:${port}`],
  intervalS: 1,
  ruleFiles: [join(root, 'ops', 'prometheus', 'alerts.yml')],
  dir: promDir,
});
const start = Date.now() / 1000;
// The machine's load says how much of it the run had: a shared machine draws slower panels.
const load = loadavg()[0]!.toFixed(1);

const demo = spawnWorker(
  {
    HTTP_PORT: String(port),
    ...(process.env.LOG_LEVEL === undefined ? {} : { LOG_LEVEL: process.env.LOG_LEVEL }),
  },
  'demo',
  {
    command: ['demo', '--rate', values.rate, '--duration', values.duration, ...positionals],
    cwd: root,
    logDir: outDir,
    echo: true,
  },
);
const exit = await demo.exited;
const code = typeof exit === 'number' ? exit : 1;
const end = Date.now() / 1000;
if (code !== 0) process.stderr.write(`record-demo: the demo exited ${code}\n`);

const dashboard = JSON.parse(
  readFileSync(join(root, 'ops', 'grafana', 'dashboards', 'rxingest.json'), 'utf8'),
) as GrafanaDashboard;
const windowS = Number(values['window-s']);
const queries = grafanaQueries(dashboard, { interval: `${windowS}s`, window: `${windowS}s` });
const html = join(outDir, 'index.html');
try {
  const up = await prometheus.query(`sum_over_time(up{job="rxingest"}[${Math.ceil(end - start) + 5}s])`);
  const scraped = up[0]?.values[0]?.[1] ?? 0;
  if (scraped < 2) throw new Error(`Prometheus scraped the worker ${scraped} times; nothing to draw`);
  const { lines, answers } = await panelData(prometheus, dashboard, queries, { start, end, stepS: 1 });
  const seriesCount = answers.reduce((n, a) => n + a.series.length, 0);
  const version = await prometheus.version();
  writeFileSync(
    html,
    renderPage(dashboard, lines, {
      subtitle:
        `npm run demo -- --rate ${values.rate} --duration ${values.duration} on ${new Date(start * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
        `${Math.round(end - start)} s, Node ${process.version}, one worker, on ${cpus().length} cores at load average ${load} when it started.`,
      method:
        `Prometheus ${version} scraped /metrics every 1 s (${scraped} scrapes); each panel is its Grafana query, answered by Prometheus's query_range at 1 s steps, ` +
        `with range selectors of ${windowS} s (the Grafana dashboard uses 1 m).`,
    }),
  );
  process.stderr.write(
    `record-demo: ${scraped} scrapes, ${queries.length} queries, ${seriesCount} series\nrecord-demo: page ${html}\n`,
  );
} finally {
  await prometheus.stop();
}

if (values.png) {
  const png = resolve(values.png);
  mkdirSync(dirname(png), { recursive: true });
  const chromium = ['chromium', 'chromium-browser', 'google-chrome'].find(
    (c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0,
  );
  if (!chromium) {
    process.stderr.write('record-demo: no chromium found (Debian: apt-get install chromium)\n');
    process.exit(1);
  }
  const shot = spawnSync(
    chromium,
    [
      '--headless',
      '--no-sandbox', // as root, Chromium's sandbox refuses to start
      '--disable-gpu',
      '--hide-scrollbars',
      '--window-size=1500,1270',
      `--screenshot=${png}`,
      `file://${html}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 },
  );
  if (shot.status !== 0) {
    process.stderr.write(`record-demo: chromium failed: ${shot.stderr.toString().slice(-500)}\n`);
    process.exit(1);
  }
  // Flat colours quantise well: about a third of the size, when Debian's pngquant is there.
  if (spawnSync('sh', ['-c', 'command -v pngquant']).status === 0) {
    spawnSync('pngquant', ['--force', '--skip-if-larger', '--quality', '60-90', '--output', png, png]);
  }
  process.stderr.write(`record-demo: screenshot ${png} (${Math.round(statSync(png).size / 1024)} KB)\n`);
}
