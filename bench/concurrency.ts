/**
 * Adaptive concurrency: runs the sweep of bench/adaptive-concurrency.test.ts
 * (vitest: it needs the harness's refusing Elasticsearch node and the contract check) and
 * reports it like the others: docs/s of fixed limits 1-16 and of the adaptive limit against
 * one refusing node, side by side, and the adaptive limit over time.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { barChart, lineChart } from '../harness/plot.js';
import type { Section } from './lib/report.js';
import { fmt } from './lib/stats.js';

export interface ConcurrencyOptions {
  readonly resultsDir: string;
  readonly log: (line: string) => void;
}

interface Run {
  readonly setting: string;
  readonly docsPerSec: number;
  readonly limits: readonly number[];
  readonly rounds?: readonly number[];
}

export async function concurrencyBenchmark(o: ConcurrencyOptions): Promise<Section> {
  const file = join(o.resultsDir, 'adaptive-concurrency.json');
  rmSync(file, { force: true });
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn('npx', ['vitest', 'run', '--project', 'bench'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const relay = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (/pushback-concurrency-sweep|✓|×|FAIL|Error/.test(line)) o.log(`    ${line.trim()}`);
    };
    child.stdout.on('data', relay);
    child.stderr.on('data', relay);
    child.on('exit', resolve);
  });
  const result = JSON.parse(readFileSync(file, 'utf8')) as {
    messages: number;
    rounds?: number;
    sampleMs: number;
    runs: Run[];
  };
  const fixed = result.runs.filter((r) => r.setting !== 'adaptive');
  const adaptive = result.runs.find((r) => r.setting === 'adaptive')!;
  const best = fixed.reduce((a, r) => (r.docsPerSec > a.docsPerSec ? r : a));
  const tail = adaptive.limits.slice(Math.floor(adaptive.limits.length / 2));
  const ratio = adaptive.docsPerSec / best.docsPerSec;
  return {
    id: 'concurrency',
    title: 'Adaptive concurrency against fixed limits, one refusing Elasticsearch node',
    tables: [
      {
        head: ['setting', 'docs/s (mean)', 'each round', 'limit (second half: min–max)'],
        rows: result.runs.map((r) => {
          const t = r.limits.slice(Math.floor(r.limits.length / 2));
          return [
            r.setting,
            fmt(r.docsPerSec, 0),
            (r.rounds ?? [r.docsPerSec]).map((x) => fmt(x, 0)).join(' / '),
            t.length > 0 ? `${Math.min(...t)}–${Math.max(...t)}` : 'n/a',
          ];
        }),
      },
    ],
    targets: [
      {
        name: 'adaptive ÷ best fixed limit (same node, same run)',
        target: '≥ 1',
        value: fmt(ratio, 2),
        pass: ratio >= 1,
      },
    ],
    notes: [
      `Each setting is a fresh worker draining the same ${fmt(result.messages, 0)} messages (8 partitions, produced before it starts; timed from its partitions being assigned), ${result.rounds ?? 1} round(s), the order reversed each round, the figure the mean of the rounds, into one Elasticsearch node with one write thread and a write queue of two (item-level 429s inside HTTP 200 answers); every run ends in exactly the contract's state (checked). Best fixed: ${best.setting}. Adaptive limit in the second half of its run: ${tail.length > 0 ? `${Math.min(...tail)}–${Math.max(...tail)}` : 'n/a'}.`,
      ...(code === 0 ? [] : [`The sweep's vitest run exited ${code}: see its output above.`]),
    ],
    plots: [
      {
        file: 'adaptive-concurrency-throughput.svg',
        title: 'Docs/s by concurrency setting',
        svg: barChart({
          title: 'Docs/s against a refusing node: fixed limits and adaptive',
          categories: result.runs.map((r) => r.setting),
          series: [{ name: 'docs/s', values: result.runs.map((r) => r.docsPerSec) }],
          unit: 'docs/s',
        }),
      },
      {
        file: 'adaptive-concurrency-limit.svg',
        title: 'The adaptive limit over time',
        svg: lineChart({
          title: 'rxingest_es_concurrency_limit during the adaptive run',
          xLabel: 's',
          yLabel: 'requests in flight allowed',
          series: [
            {
              name: 'adaptive limit',
              points: adaptive.limits.map((v, i) => [(i * result.sampleMs) / 1000, v] as const),
            },
          ],
          refs: [{ y: Number(best.setting.replace('fixed-', '')), label: `best fixed (${best.setting})` }],
        }),
      },
    ],
    data: result,
  };
}
