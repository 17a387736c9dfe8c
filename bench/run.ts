/**
 * `npm run bench`: every benchmark, side by side with its baselines, in one command.
 *
 *   npm run bench                       the full suite (≤ 15 min on a 2-core machine)
 *   npm run bench -- --quick            short durations: a smoke run (≤ 2 min)
 *   npm run bench -- --only graph,kata  a subset: graph, kata, e2e, sweep, burst, hot, pinned, partitions, concurrency, commits, hotpath, compression
 *   npm run bench -- --only scaleout    1, 2, 3 workers on a 3-broker cluster (not in the full suite:
 *                                       it starts three more JVMs and takes ~4 min)
 *   npm run bench -- --no-build         run the worker from src through tsx instead of building dist/
 *
 * Prints a table per benchmark and writes bench/results/latest.md, index.html, latest.json and
 * the plots (SVG). Benchmarks measure and report: the exit code is 0 whatever the numbers are,
 * and non-zero only if a benchmark could not run.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { commitsBenchmark } from './commits.js';
import { compressionBenchmark } from './compression.js';
import { concurrencyBenchmark } from './concurrency.js';
import { endToEndBenchmarks } from './e2e.js';
import { graphBenchmark } from './graph.js';
import { hotBenchmark } from './hot.js';
import { hotPathBenchmark } from './hot-path.js';
import { kataBenchmark } from './kata.js';
import { type MachineInfo, writeResults } from './lib/output.js';
import { type Section, targetsTable, textTable } from './lib/report.js';
import { partitionsBenchmark } from './partitions.js';
import { pinnedBenchmark } from './pinned.js';
import { scaleOutBenchmark } from './scaleout.js';

const ALL = [
  'graph',
  'kata',
  'e2e',
  'sweep',
  'burst',
  'hot',
  'pinned',
  'partitions',
  'concurrency',
  'commits',
  'hotpath',
  'compression',
  'scaleout',
] as const;
/** What `npm run bench` runs without --only (scale-out starts a 3-broker cluster and takes minutes of its own). */
const DEFAULT = ALL.filter((b) => b !== 'scaleout');

const USAGE = `usage: npm run bench [-- --quick] [--only graph,kata,e2e,sweep,burst,hot,pinned,partitions,concurrency,commits,hotpath,compression,scaleout] [--no-build]
  --quick     short durations (a smoke run, about 2 minutes)
  --only      a subset; sweep and burst run e2e first (they need its rate);
              pinned pins Elasticsearch to CPU 0 and the load to CPU 1 (taskset);
              partitions: the same pinned comparison at 1, 4, 8 and 32 input partitions,
              peak RSS at 96, and a cold worker's latency (BENCH_PARTITIONS=1,8 narrows it);
              compression drains the same events sent by kcat in each codec's batches;
              scaleout (1-3 workers on a 3-broker cluster, ~4 min) runs only when named
  --no-build  run the worker through tsx instead of building dist/
BENCH_WORKER_NODE_FLAGS='--max-semi-space-size=16' adds node flags to every worker, after npm start's.
Writes bench/results/latest.md, index.html, latest.json and SVG plots.
`;

function parseArgs(argv: string[]) {
  let quick = false;
  let build = true;
  let only = new Set<string>(DEFAULT);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') quick = true;
    else if (a === '--no-build') build = false;
    else if (a === '--only' || a.startsWith('--only=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (!v) throw new Error('--only needs a list, e.g. --only graph,kata');
      only = new Set(
        v
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      );
      const bad = [...only].filter((x) => !(ALL as readonly string[]).includes(x));
      if (bad.length > 0)
        throw new Error(`--only: unknown benchmark(s) ${bad.join(', ')}; known: ${ALL.join(', ')}`);
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  return { quick, build, only };
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1]!.trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown CPU';
}

/** Builds dist/ so that the worker runs as shipped; falls back to tsx if the build fails. */
async function buildWorker(build: boolean, log: (line: string) => void): Promise<string[]> {
  if (!build) {
    // Not the shipped worker: under tsx it held 20–45 MB more at peak (2026-12-05) and runs whatever src/ holds now.
    log('  --no-build: the worker runs from src/ through tsx, not as shipped (its RSS and latency differ)');
    return ['--import', 'tsx', 'src/cli/main.ts'];
  }
  try {
    await promisify(execFile)('npm', ['run', '--silent', 'build'], { maxBuffer: 16 * 1024 * 1024 });
    log('  built dist/ (npm run build): the worker runs as shipped, node dist/cli/main.js worker');
    return ['dist/cli/main.js'];
  } catch (err) {
    log(`  npm run build failed (${(err as Error).message.split('\n')[0]}); running the worker through tsx`);
    return ['--import', 'tsx', 'src/cli/main.ts'];
  }
}

async function main(): Promise<void> {
  const { quick, build, only } = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const budgetMs = (quick ? 115 : 870) * 1000;
  const resultsDir = join(process.cwd(), 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const loadBefore = loadavg();
  const cores = availableParallelism();
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const sections: Section[] = [];
  const show = (s: Section) => {
    log(`\n== ${s.title}`);
    for (const t of s.tables) log(`\n${textTable(t)}`);
    if (s.targets.length > 0) log(`\n${textTable(targetsTable(s.targets))}`);
    log('');
  };

  log(
    `rxingest benchmarks${quick ? ' (quick)' : ''}: ${[...only].join(', ')} · ${cores} cores · Node ${process.version}`,
  );
  if ((globalThis as { gc?: unknown }).gc === undefined)
    log('  (run with --expose-gc for steadier graph numbers; npm run bench does)');

  if (only.has('graph')) {
    log('\n[1/8] graph overhead …');
    const s = await graphBenchmark({ quick, resultsDir });
    sections.push(s);
    show(s);
  }
  if (only.has('kata')) {
    log('\n[2/8] the kata …');
    const s = await kataBenchmark({ quick });
    sections.push(s);
    show(s);
  }
  let workerEntry: string[] | undefined;
  if (['e2e', 'sweep', 'burst', 'pinned', 'partitions', 'compression', 'scaleout'].some((b) => only.has(b)))
    workerEntry = await buildWorker(build, log);
  if (only.has('e2e') || only.has('sweep') || only.has('burst')) {
    log('\n[3-5/8] end to end on the local stack …');
    const e2e = await endToEndBenchmarks({
      quick,
      resultsDir,
      only,
      deadline: started + budgetMs,
      cores,
      log,
      workerEntry,
    });
    for (const s of e2e) {
      sections.push(s);
      show(s);
    }
  }
  if (only.has('hot')) {
    log('\n[6/8] hot clients: partition load with and without spreading …');
    const s = await hotBenchmark({ quick, log });
    sections.push(s);
    show(s);
  }

  if (only.has('pinned')) {
    log('\n[7/8] Elasticsearch is the speed limit: pinned and not pinned …');
    const s = await pinnedBenchmark({ quick, resultsDir, log, workerEntry });
    sections.push(s);
    show(s);
  }

  if (only.has('partitions')) {
    log('\n[partitions] Elasticsearch is the limit at every partition count …');
    const s = await partitionsBenchmark({ quick, resultsDir, log, workerEntry });
    sections.push(s);
    show(s);
  }

  if (only.has('concurrency')) {
    log('\n[8/8] adaptive concurrency against a refusing node (the vitest sweep, about 3 minutes) …');
    const s = await concurrencyBenchmark({ resultsDir, log });
    sections.push(s);
    show(s);
  }

  if (only.has('commits')) {
    log('\n[commits] commits back to back, the first retry backoff shipped vs kafkajs’s default …');
    const s = await commitsBenchmark({ quick, log });
    sections.push(s);
    show(s);
  }

  if (only.has('hotpath')) {
    log('\n[hotpath] per-record hot paths against what they replaced …');
    const s = await hotPathBenchmark({ quick, log });
    sections.push(s);
    show(s);
  }

  if (only.has('compression')) {
    log('\n[compression] the worker draining input batches of each codec …');
    const s = await compressionBenchmark({ quick, resultsDir, log, workerEntry });
    sections.push(s);
    show(s);
  }

  if (only.has('scaleout')) {
    log('\n[9] scale-out on a 3-broker cluster …');
    const s = await scaleOutBenchmark({ quick, resultsDir, cores, log, workerEntry: workerEntry ?? [] });
    sections.push(s);
    show(s);
  }

  const git = await promisify(execFile)('git', ['describe', '--always', '--dirty'])
    .then((r) => r.stdout.trim())
    .catch(() => 'unknown');
  const machine: MachineInfo = {
    commit: git,
    date: new Date().toISOString().replace('T', ' ').slice(0, 16) + ' UTC',
    cores,
    cpuModel: cpuModel(),
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadBefore,
    loadAfter: loadavg(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    durationS: (performance.now() - started) / 1000,
  };
  const files = await writeResults(resultsDir, machine, sections);
  const targets = sections.flatMap((s) => s.targets);
  log('== Targets');
  log(textTable(targetsTable(targets)));
  log(`\nwrote bench/results/{${files.join(',')}} in ${Math.round(machine.durationS)} s`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
