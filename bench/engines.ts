/**
 * The worker ÷ raw-ceiling ratio on each search engine, in one run: the partition sweep's
 * 8-partition events rows (pinned and not) against the stack's Elasticsearch 9, then against
 * an OpenSearch 2 started beside it on a spare port (`npm run stack:up` with
 * RXINGEST_SEARCH_ENGINE, its own state folder) and stopped at the end. Each engine's rows
 * come from a child `bench/run.ts --only partitions` pointed at it (ES_NODE, ES_ENGINE), so
 * both are measured exactly the same way.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';

export interface EnginesOptions {
  readonly quick: boolean;
  readonly resultsDir: string;
  readonly log: (line: string) => void;
}

interface Engine {
  readonly label: string;
  /** Where the engine answers, and what to start it with (none: the stack's own). */
  readonly env: Readonly<Record<string, string>>;
  readonly start?: Readonly<Record<string, string>>;
}

interface SweepRow {
  readonly pinned: boolean;
  readonly partitions: number;
  readonly ceiling: { readonly rate: number };
  readonly worker: { readonly rate: number; readonly threadBusy: number };
}

const OPENSEARCH = {
  RXINGEST_SEARCH_ENGINE: 'opensearch',
  SEARCH_VERSION: '2.19.4',
  ES_PORT: '9240',
  ES_HEAP: '768m',
  RXINGEST_STACK_DIR: '.stack-bench-os2',
};

const ENGINES: readonly Engine[] = [
  { label: 'Elasticsearch 9.2.4 (the stack)', env: {} },
  {
    label: 'OpenSearch 2.19.4',
    env: { ES_NODE: `http://127.0.0.1:${OPENSEARCH.ES_PORT}`, ES_ENGINE: 'opensearch-2' },
    start: OPENSEARCH,
  },
];

const run = promisify(execFile);

/** One child sweep against the engine `env` names; its rows, from the results it wrote. */
async function sweepOn(engine: Engine, o: EnginesOptions): Promise<SweepRow[]> {
  const args = ['--expose-gc', '--import', 'tsx', 'bench/run.ts', '--only', 'partitions'];
  if (o.quick) args.push('--quick');
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...engine.env, BENCH_PARTITIONS: '8', BENCH_WORKLOADS: 'events', BENCH_COLD: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n'))
      if (line.startsWith('    ') || line.startsWith('  ')) o.log(`  ${engine.label}:${line}`);
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the sweep against ${engine.label} exited ${code}`);
  const results = JSON.parse(readFileSync(join(o.resultsDir, 'latest.json'), 'utf8')) as {
    sections: { id: string; data: { rows: SweepRow[] } }[];
  };
  return results.sections.find((s) => s.id === 'partitions')?.data.rows ?? [];
}

const stack = (verb: 'up' | 'down', env: Readonly<Record<string, string>>, ...extra: string[]) =>
  run('bash', ['scripts/stack.sh', verb, ...extra], {
    env: { ...process.env, ...env },
    maxBuffer: 16 * 1024 * 1024,
  });

export async function enginesBenchmark(o: EnginesOptions): Promise<Section> {
  const measured: { engine: Engine; rows: SweepRow[] }[] = [];
  for (const engine of ENGINES) {
    if (engine.start) {
      o.log(`  starting ${engine.label} on port ${engine.start.ES_PORT} …`);
      await stack('up', engine.start);
    }
    try {
      measured.push({ engine, rows: await sweepOn(engine, o) });
    } finally {
      if (engine.start) await stack('down', engine.start, 'elasticsearch').catch(() => undefined);
    }
  }
  const rows = measured.flatMap(({ engine, rows }) =>
    rows.map((r) => [
      engine.label,
      r.pinned ? 'pinned' : 'not pinned',
      fmt(r.ceiling.rate, 0),
      fmt(r.worker.rate, 0),
      fmt(r.worker.rate / r.ceiling.rate, 2),
      fmt(r.worker.threadBusy, 2),
    ]),
  );
  return {
    id: 'engines',
    title: 'The worker against the raw _bulk ceiling on each engine (events, 8 partitions)',
    tables: [
      {
        head: [
          'engine',
          'mode',
          'raw _bulk ceiling (docs/s)',
          'worker (docs/s)',
          'ratio',
          'worker thread busy',
        ],
        rows,
      },
    ],
    targets: [],
    notes: [
      'Each engine is measured by the partition sweep (BENCH_PARTITIONS=8, events only), one engine after the other in this run; OpenSearch runs on the same machine with the same heap as Elasticsearch, and is stopped afterwards.',
    ],
    plots: [],
    data: { engines: measured.map(({ engine, rows }) => ({ engine: engine.label, rows })) },
  };
}
