import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { setHeapGrowth } from '../../../../src/pushback/memory/heap-growth.js';

const churn = new URL('../../../support/probes/heap-churn.ts', import.meta.url).pathname;

/** Each major GC of a churning child as [MB in use before, MB alive after], from --trace-gc. */
async function majorGcs(growthPercent: number): Promise<[number, number][]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--trace-gc', '--import', 'tsx', churn], {
    env: { ...process.env, HEAP_GROWTH_PERCENT: String(growthPercent), CHURN_MS: '2500' },
  });
  expect(stdout).toContain('churned');
  return [...stdout.matchAll(/Mark-Compact ([\d.]+) \([\d.]+\) -> ([\d.]+)/g)].map((m) => [
    Number(m[1]),
    Number(m[2]),
  ]);
}

/**
 * How far past the previous major GC's live heap each major GC started, as a factor. V8 adds
 * the young generation's capacity (up to 32 MB here) to the limit, so that much is taken off.
 */
const growthFactors = (gcs: [number, number][]) =>
  gcs.slice(1).map(([before], i) => (before - 32) / gcs[i]![1]);

describe('setHeapGrowth', () => {
  it('bounds how far the old generation grows past what is alive, set after start as the worker does', async () => {
    const bounded = growthFactors(await majorGcs(50));
    expect(bounded.length).toBeGreaterThanOrEqual(3);
    // 50%: each major GC comes before the old generation reaches 1.5× what was alive (a little slack for
    // what is allocated while incremental marking finishes).
    expect(Math.max(...bounded)).toBeLessThan(1.7);
  }, 30_000);

  it('leaves V8 its own choice at 0, which lets the same churn grow the heap far further', async () => {
    const free = growthFactors(await majorGcs(0));
    expect(Math.max(...free)).toBeGreaterThan(2.5);
  }, 30_000);

  it('refuses a negative or fractional percent', () => {
    expect(() => setHeapGrowth(-1)).toThrow(RangeError);
    expect(() => setHeapGrowth(12.5)).toThrow(RangeError);
  });
});
