import { describe, expect, it } from 'vitest';
import {
  type HeapChange,
  HeapGuard,
  oldGenerationLimit,
  onMajorGc,
  v8HeapReader,
} from '../../../../src/pushback/memory/heap-guard.js';
import { ManualClock } from '../../../support/fakes/manual-clock.js';

const MB = 1024 * 1024;

/**
 * A guard over a heap whose use the test sets, and records in flight it sets too (some, unless
 * told); limit 100 MB, pause at 70%, resume at 50%.
 */
function setUp() {
  const clock = new ManualClock();
  const heap = { usedBytes: 0, limitBytes: 100 * MB };
  const work = { inFlight: 500 };
  const changes: HeapChange[] = [];
  const guard = new HeapGuard(
    { pauseRatio: 0.7, resumeRatio: 0.5 },
    { clock, read: () => ({ ...heap }), inFlight: () => work.inFlight, onChange: (c) => changes.push(c) },
  );
  const use = (mb: number) => {
    heap.usedBytes = mb * MB;
  };
  const inFlight = (n: number) => {
    work.inFlight = n;
  };
  return { clock, guard, changes, use, inFlight };
}

describe('HeapGuard', () => {
  it('holds intake when a major GC leaves the pause share of the limit alive, once', () => {
    const { guard, changes, use } = setUp();
    use(69);
    guard.afterMajorGc();
    expect(guard.isHigh).toBe(false);
    use(70);
    guard.afterMajorGc();
    use(80);
    guard.afterMajorGc();
    expect(guard.isHigh).toBe(true);
    expect(changes).toEqual([{ high: true, usedMb: 70, limitMb: 100, reason: 'live-heap-high' }]);
  });

  it('does not hold for heap in use between GCs: garbage is not alive', async () => {
    const { clock, guard, changes, use } = setUp();
    use(95);
    await clock.advance(60_000);
    expect(guard.isHigh).toBe(false);
    expect(changes).toEqual([]);
  });

  it('resumes once the heap in use falls to the resume share, seen by its own checks', async () => {
    const { clock, guard, changes, use } = setUp();
    use(75);
    guard.afterMajorGc();
    use(60);
    await clock.advance(1_000);
    expect(guard.isHigh).toBe(true);
    use(50);
    await clock.advance(250);
    expect(guard.isHigh).toBe(false);
    expect(changes.at(-1)).toEqual({ high: false, usedMb: 50, limitMb: 100, reason: 'heap-shrank' });
    expect(clock.pending).toBe(0);
  });

  it('resumes at a major GC that leaves little alive', () => {
    const { guard, changes, use } = setUp();
    use(90);
    guard.afterMajorGc();
    use(30);
    guard.afterMajorGc();
    expect(guard.isHigh).toBe(false);
    expect(changes.map((c) => [c.high, c.reason])).toEqual([
      [true, 'live-heap-high'],
      [false, 'heap-shrank'],
    ]);
  });

  it('stays held while major GCs keep finding the heap high, and is not released by time then', async () => {
    const { clock, guard, use } = setUp();
    use(90);
    guard.afterMajorGc();
    for (let i = 0; i < 10; i++) {
      await clock.advance(5_000);
      guard.afterMajorGc();
    }
    expect(guard.isHigh).toBe(true);
  });

  it('stays held with no major GC for a long time while records are in flight', async () => {
    const { clock, guard, use } = setUp();
    use(90);
    guard.afterMajorGc();
    await clock.advance(120_000);
    expect(guard.isHigh).toBe(true);
  });

  it('resumes once nothing is in flight, the heap still above the resume line: holding frees nothing more', async () => {
    const { clock, guard, changes, use, inFlight } = setUp();
    use(90);
    guard.afterMajorGc();
    use(62);
    inFlight(3);
    await clock.advance(1_000);
    expect(guard.isHigh).toBe(true);
    inFlight(0);
    await clock.advance(250);
    expect(guard.isHigh).toBe(false);
    expect(changes.at(-1)).toEqual({ high: false, usedMb: 62, limitMb: 100, reason: 'drained' });
    expect(clock.pending).toBe(0);
  });

  it('drained, with major GCs every second leaving 62 MB alive, is not held for ever', async () => {
    // The rest of the heap (clients, code, caches) is no record's: waiting for it to fall
    // to the resume line, with GCs coming, would hold intake for good.
    const { clock, guard, use, inFlight } = setUp();
    use(75);
    guard.afterMajorGc();
    inFlight(0);
    use(62);
    for (let i = 0; i < 5; i++) {
      await clock.advance(1_000);
      guard.afterMajorGc();
    }
    expect(guard.isHigh).toBe(false);
  });

  it('holds again at the next major GC once records taken in after resuming bring the live heap back up', async () => {
    const { clock, guard, changes, use, inFlight } = setUp();
    use(80);
    guard.afterMajorGc();
    inFlight(0);
    await clock.advance(250);
    inFlight(800);
    guard.afterMajorGc();
    expect(guard.isHigh).toBe(true);
    expect(changes.map((c) => c.reason)).toEqual(['live-heap-high', 'drained', 'live-heap-high']);
  });

  it('does not hold for a high heap with nothing in flight: it is not the records', () => {
    const { guard, changes, use, inFlight } = setUp();
    inFlight(0);
    use(90);
    guard.afterMajorGc();
    expect(guard.isHigh).toBe(false);
    expect(changes).toEqual([]);
  });

  it('stop() clears its timer', () => {
    const { clock, guard, use } = setUp();
    use(90);
    guard.afterMajorGc();
    expect(clock.pending).toBe(1);
    guard.stop();
    expect(clock.pending).toBe(0);
  });
});

describe('the V8 heap and its major GCs', () => {
  it('the old generation limit is heap_size_limit less the three semi-spaces of the young generation', () => {
    expect(oldGenerationLimit(144 * MB, '--max-old-space-size=96')).toBe(96 * MB);
    expect(oldGenerationLimit(240 * MB, '')).toBe(192 * MB);
    // The last --max-semi-space-size wins, as in node.
    expect(oldGenerationLimit(216 * MB, '--max-semi-space-size=4 --max-semi-space-size=8')).toBe(192 * MB);
    // Never less than half the heap, whatever the flags say.
    expect(oldGenerationLimit(100 * MB, '--max-semi-space-size=64')).toBe(50 * MB);
  });

  it('this process: the limit is the measured heap_size_limit less 48 MB, and some of it is in use', async () => {
    const { getHeapStatistics } = await import('node:v8');
    const r = v8HeapReader()();
    if (!/--max-semi-space-size/.test(`${process.execArgv} ${process.env.NODE_OPTIONS ?? ''}`))
      expect(r.limitBytes).toBe(getHeapStatistics().heap_size_limit - 48 * MB);
    expect(r.usedBytes).toBeGreaterThan(0);
  });

  it('reports the major GCs of this process', async () => {
    let seen = 0;
    const stop = onMajorGc(() => {
      seen++;
    });
    try {
      // Old-space garbage until V8 has to mark-compact: arrays kept long enough to be promoted.
      const deadline = Date.now() + 20_000;
      let keep: unknown[] = [];
      while (seen === 0 && Date.now() < deadline) {
        for (let i = 0; i < 50_000; i++) keep.push({ i, s: `x${i}` });
        if (keep.length > 2_000_000) keep = [];
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      stop();
    }
    expect(seen).toBeGreaterThan(0);
  });
});
