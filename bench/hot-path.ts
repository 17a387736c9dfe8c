/**
 * Benchmark 10, per-record hot paths, each against what it replaced, in one process and one
 * run (rounds interleaved, order swapped each round, median of the rounds):
 *
 *   windowed seen-set       one hash lookup per admitted key (a Set that grows or not) against
 *                           two (Map has, then set), on the same ids
 *   create action lines     serialised once as a string against JSON.stringify of the object
 *
 * In-memory, no servers. Run it pinned (`taskset -c 1 npm run bench -- --only hotpath`) to
 * keep the scheduler out of the figures.
 */
import { createWindowedSeenSet } from '../src/operators/distinct-within.js';
import { createActionLine } from '../src/sinks/elasticsearch-bulk.js';
import type { Section } from './lib/report.js';
import { fmt, median } from './lib/stats.js';

export interface HotPathOptions {
  readonly quick: boolean;
  readonly log: (line: string) => void;
}

interface Variant {
  readonly label: string;
  /** Does the work once over the inputs; returns how many items it did (ns per item is reported). */
  readonly run: () => number;
}

interface Case {
  readonly name: string;
  readonly unit: string;
  /** Runs per timing (each run is one pass over the case's inputs). */
  readonly reps: number;
  readonly now: Variant;
  readonly before: Variant;
}

// ------------------------------------------------------------------ the cases

function seenSetCase(): Case {
  // 200,000 ids of which 1% come again, as in the benchmarks' workload.
  const ids = Array.from({ length: 200_000 }, (_, i) => `evt-${(i * 7919) % 198_000}-7f3a`);
  return {
    name: 'windowed seen-set, admit',
    unit: 'id',
    reps: 2,
    now: {
      label: 'createWindowedSeenSet (one lookup)',
      run: () => {
        const seen = createWindowedSeenSet<string>(10_000, () => 0);
        for (const id of ids) seen.admit(id);
        return ids.length;
      },
    },
    before: {
      label: 'Map has + set (two lookups), as before',
      run: () => {
        // What admit did before, with the same clock read and expiry check (nothing expires).
        const admittedAt = new Map<string, number>();
        const keys: string[] = [];
        const times: number[] = [];
        const now = () => 0;
        for (const id of ids) {
          const t = now();
          if (keys.length > 0 && t - times[0]! >= 10_000) throw new Error('nothing expires here');
          if (admittedAt.has(id)) continue;
          admittedAt.set(id, 0);
          keys.push(id);
          times.push(0);
        }
        return ids.length;
      },
    },
  };
}

function actionLineCase(): Case {
  const ids = Array.from({ length: 10_000 }, (_, i) => `evt-${i}-7f3a`);
  const index = 'rxingest-events';
  const indexJson = JSON.stringify(index);
  let sink = 0;
  return {
    name: '_bulk create action line',
    unit: 'line',
    reps: 20,
    now: {
      label: 'createActionLine (a string)',
      run: () => {
        for (const id of ids) sink += createActionLine(indexJson, id).length;
        return ids.length;
      },
    },
    before: {
      label: 'JSON.stringify of the action object',
      run: () => {
        for (const id of ids) sink += JSON.stringify({ create: { _index: index, _id: id } }).length;
        return ids.length + (sink < 0 ? 1 : 0);
      },
    },
  };
}

// ------------------------------------------------------------------ the run

/** ns per item of `v`, over `reps` runs. */
function time(v: Variant, reps: number): number {
  let items = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) items += v.run();
  return Number(process.hrtime.bigint() - t0) / items;
}

export function hotPathBenchmark(o: HotPathOptions): Section {
  const rounds = o.quick ? 3 : 9;
  const cases = [seenSetCase(), actionLineCase()];
  const rows: { name: string; unit: string; now: string; before: string; nowNs: number; beforeNs: number }[] =
    [];
  for (const c of cases) {
    for (let i = 0; i < 3; i++) {
      c.now.run();
      c.before.run();
    }
    const reps = o.quick ? Math.max(1, c.reps / 4) : c.reps;
    const now: number[] = [];
    const before: number[] = [];
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        now.push(time(c.now, reps));
        before.push(time(c.before, reps));
      } else {
        before.push(time(c.before, reps));
        now.push(time(c.now, reps));
      }
    }
    const row = {
      name: c.name,
      unit: c.unit,
      now: c.now.label,
      before: c.before.label,
      nowNs: median(now),
      beforeNs: median(before),
    };
    o.log(
      `  ${c.name}: ${fmt(row.nowNs, 0)} ns per ${c.unit} (${c.now.label}) vs ${fmt(row.beforeNs, 0)} (${c.before.label})`,
    );
    rows.push(row);
  }
  return {
    id: 'hotpath',
    title: 'Per-record hot paths against what they replaced (in memory, one process)',
    tables: [
      {
        head: ['path', 'now', 'ns per item', 'before', 'ns per item', 'saved (ns per item)', 'now / before'],
        rows: rows.map((r) => [
          `${r.name} (per ${r.unit})`,
          r.now,
          fmt(r.nowNs, 0),
          r.before,
          fmt(r.beforeNs, 0),
          fmt(r.beforeNs - r.nowNs, 0),
          fmt(r.nowNs / r.beforeNs, 2),
        ]),
      },
    ],
    targets: [],
    notes: [
      `Median of ${rounds} interleaved rounds, the order swapped every round. The worker spends about 20–35 µs of CPU per document on this machine, so these are shares of a percent to a few percent each.`,
    ],
    plots: [],
    data: { rows },
  };
}
