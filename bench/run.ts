/**
 * `npm run bench`: every benchmark, side by side with its baselines, in one command.
 *
 *   npm run bench                       the full suite (≤ 15 min on a 2-core machine)
 *   npm run bench -- --quick            short durations: a smoke run (≤ 2 min)
 *   npm run bench -- --only graph,kata  a subset: graph, kata, e2e, sweep, burst, hot, pinned, partitions,
 *                                       adaptive-concurrency, commits, compression
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
import { parseArgs as parseCommandLine, promisify } from 'node:util';
import { adaptiveConcurrencyBenchmark } from './adaptive-concurrency.js';
import { commitsBenchmark } from './commits.js';
import { compressionBenchmark } from './compression.js';
import { endToEndBenchmarks } from './e2e.js';
import { enginesBenchmark } from './engines.js';
import { graphBenchmark } from './graph.js';
import { hotBenchmark } from './hot.js';
import { kataBenchmark } from './kata.js';
import { type MachineInfo, writeResults } from './lib/output.js';
import { type Section, targetsTable, textTable } from './lib/report.js';
import { partitionsBenchmark } from './partitions.js';
import { pinnedBenchmark } from './pinned.js';
import { scaleOutBenchmark } from './scaleout.js';

interface RunContext {
  readonly quick: boolean;
  readonly resultsDir: string;
  readonly cores: number;
  readonly only: ReadonlySet<string>;
  readonly deadline: number;
  readonly log: (line: string) => void;
  readonly workerEntry: string[] | undefined;
}

/**
 * The suite, in the order it runs: each benchmark named once, by what it measures, with what
 * guards which promise in docs/benchmarks.md. `worker`: it starts the shipped worker (dist/ is
 * built first). e2e also reports sweep and burst, which need its drain rate.
 */
const SUITE: readonly {
  readonly id: string;
  readonly what: string;
  readonly worker?: boolean;
  readonly alsoFor?: readonly string[];
  readonly run: (c: RunContext) => Promise<Section | Section[]>;
}[] = [
  { id: 'graph', what: 'the graph’s cost per record, in memory', run: (c) => graphBenchmark(c) },
  { id: 'kata', what: 'the kata: 1,000 msg/s, 10 ms each, per-client order', run: (c) => kataBenchmark(c) },
  {
    id: 'e2e',
    what: 'end to end on the local stack: drain against the raw ceiling, latency, BATCH_MAX, a 10× burst',
    worker: true,
    alsoFor: ['sweep', 'burst'],
    run: (c) => endToEndBenchmarks(c),
  },
  { id: 'hot', what: 'hot clients: partition load with and without spreading', run: (c) => hotBenchmark(c) },
  {
    id: 'pinned',
    what: 'Elasticsearch is the speed limit: worker against raw _bulk, pinned and not',
    worker: true,
    run: (c) => pinnedBenchmark(c),
  },
  {
    id: 'partitions',
    what: 'Elasticsearch is the limit at every partition count: 1, 4, 8, 32 partitions, RSS at 96, a cold start',
    worker: true,
    run: (c) => partitionsBenchmark(c),
  },
  {
    id: 'engines',
    what: 'the worker ÷ ceiling on Elasticsearch 9 and on an OpenSearch 2 started beside it',
    run: (c) => enginesBenchmark(c),
  },
  {
    id: 'adaptive-concurrency',
    what: 'the adaptive Elasticsearch request limit against fixed limits 1-16 on a refusing node (about 8 minutes)',
    worker: true,
    run: (c) => adaptiveConcurrencyBenchmark(c),
  },
  { id: 'commits', what: 'transactional commits back to back', run: (c) => commitsBenchmark(c) },
  {
    id: 'compression',
    what: 'the worker draining input batches of each codec',
    worker: true,
    run: (c) => compressionBenchmark(c),
  },
  {
    id: 'scaleout',
    what: 'scale-out: 1, 2, 3 workers on a 3-broker cluster',
    worker: true,
    run: (c) => scaleOutBenchmark({ ...c, workerEntry: c.workerEntry ?? [] }),
  },
];

const ALL = SUITE.flatMap((b) => [b.id, ...(b.alsoFor ?? [])]);
/**
 * What `npm run bench` runs without --only: scale-out starts a 3-broker cluster and engines an
 * OpenSearch node, each taking minutes of its own.
 */
const DEFAULT = ALL.filter((b) => b !== 'scaleout' && b !== 'engines');

const USAGE = `usage: npm run bench [-- --quick] [--only ${ALL.join(',')}] [--no-build]
  --quick     short durations (a smoke run, about 2 minutes)
  --only      a subset; sweep and burst run e2e first (they need its rate);
              pinned and partitions pin Elasticsearch to CPU 0 and the load to CPU 1 (taskset);
              partitions: BENCH_PARTITIONS=1,8 and BENCH_WORKLOADS=events narrow it;
              compression drains the same events sent by kcat in each codec's batches;
              adaptive-concurrency: BENCH_ROUNDS=4 and BENCH_SETTINGS=fixed-8,adaptive narrow it;
              scaleout (1-3 workers on a 3-broker cluster, ~4 min) and engines (the same
              8-partition rows on Elasticsearch 9 and OpenSearch 2, ~8 min) run only when named
  --no-build  run the worker through tsx instead of building dist/
BENCH_WORKER_NODE_FLAGS='--max-semi-space-size=16' adds node flags to every worker, after npm start's.
Writes bench/results/latest.md, index.html, latest.json and SVG plots.
`;

function parseArgs(argv: string[]) {
  const { values } = parseCommandLine({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
      only: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const only = new Set(
    values.only === undefined
      ? DEFAULT
      : values.only
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
  );
  if (only.size === 0) throw new Error('--only needs a list, e.g. --only graph,kata');
  const bad = [...only].filter((x) => !ALL.includes(x));
  if (bad.length > 0)
    throw new Error(`--only: unknown benchmark(s) ${bad.join(', ')}; known: ${ALL.join(', ')}`);
  return { quick: values.quick, build: !values['no-build'], only };
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
    // Not the shipped worker: under tsx it holds more memory at peak and runs whatever src/ holds now.
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

  const selected = SUITE.filter((b) => [b.id, ...(b.alsoFor ?? [])].some((id) => only.has(id)));
  const workerEntry = selected.some((b) => b.worker) ? await buildWorker(build, log) : undefined;
  const context: RunContext = {
    quick,
    resultsDir,
    cores,
    only,
    deadline: started + budgetMs,
    log,
    workerEntry,
  };
  for (const b of selected) {
    log(`\n[${b.id}] ${b.what} …`);
    const result = await b.run(context);
    for (const s of Array.isArray(result) ? result : [result]) {
      sections.push(s);
      show(s);
    }
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
