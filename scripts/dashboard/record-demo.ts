/**
 * Runs `rxingest demo` with the worker's HTTP server on, scrapes /metrics every
 * second while it runs, and draws the Grafana dashboard's panels from those
 * scrapes into a self-contained HTML page, then (with --png) a screenshot of it
 * with headless Chromium. Grafana itself is not needed.
 *
 *   npx tsx scripts/dashboard/record-demo.ts [--rate 2000] [--duration 60] [--png docs/dashboard.png] [-- demo options]
 *
 * Scrapes and the page go to .stack/dashboard/ (not committed).
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parsePrometheusText } from './prometheus-text.js';
import type { Scrape } from './promql-lite.js';
import { type GrafanaDashboard, renderPage } from './render-page.js';

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
const scrapeFile = join(outDir, 'scrapes.jsonl');
writeFileSync(scrapeFile, '');
const port = await freePort();
const url = `http://127.0.0.1:${port}/metrics`;

const demo = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    'src/cli/main.ts',
    'demo',
    '--rate',
    values.rate,
    '--duration',
    values.duration,
    ...positionals,
  ],
  { cwd: root, env: { ...process.env, HTTP_PORT: String(port) }, stdio: ['ignore', 'inherit', 'inherit'] },
);
const exited = new Promise<number>((r) => demo.on('exit', (code) => r(code ?? 1)));
let running = true;
void exited.then(() => {
  running = false;
});

const scrapes: Scrape[] = [];
while (running) {
  const t = Date.now();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(900) });
    if (res.ok) {
      const text = await res.text();
      scrapes.push({ t, samples: parsePrometheusText(text).samples });
      appendFileSync(scrapeFile, `${JSON.stringify({ t, text })}\n`);
    }
  } catch {
    // Not up yet, or already stopped.
  }
  await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - t))));
}
const code = await exited;
if (code !== 0) process.stderr.write(`record-demo: the demo exited ${code}\n`);
if (scrapes.length < 2) {
  process.stderr.write(`record-demo: only ${scrapes.length} scrapes of ${url}; nothing to draw\n`);
  process.exit(1);
}

const dashboard = JSON.parse(
  readFileSync(join(root, 'ops', 'grafana', 'dashboards', 'rxingest.json'), 'utf8'),
) as GrafanaDashboard;
const seconds = Math.round((scrapes.at(-1)!.t - scrapes[0]!.t) / 1000);
const page = renderPage(dashboard, scrapes, {
  subtitle:
    `npm run demo -- --rate ${values.rate} --duration ${values.duration} on ${new Date(scrapes[0]!.t).toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
    `${seconds} s of scrapes, Node ${process.version}, one worker.`,
  maxWindowS: Number(values['window-s']),
});
const html = join(outDir, 'index.html');
writeFileSync(html, page);
process.stderr.write(`record-demo: ${scrapes.length} scrapes in ${scrapeFile}\nrecord-demo: page ${html}\n`);

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
      '--window-size=1500,1230',
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

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}
