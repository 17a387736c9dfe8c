import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import type { HeapGuardSettings } from '../../config/control-settings.js';
import type { Clock, TimerHandle } from '../clock.js';

/** V8's old generation as the guard reads it (bytes): what `--max-old-space-size` caps. */
export interface HeapReading {
  /** In use: right after a major GC, what is alive; otherwise live plus garbage. */
  readonly usedBytes: number;
  /** The most it may hold before V8 ends the process. */
  readonly limitBytes: number;
}

export interface HeapChange {
  readonly high: boolean;
  readonly usedMb: number;
  readonly limitMb: number;
  /** Why it resumed: the heap shrank, or nothing is left in flight for the hold to wait for. */
  readonly reason: 'live-heap-high' | 'heap-shrank' | 'drained';
}

export interface HeapGuardDeps {
  readonly clock: Clock;
  readonly read: () => HeapReading;
  /** Records taken in and not finished yet, over every partition: what a hold waits for. */
  readonly inFlight: () => number;
  readonly onChange: (change: HeapChange) => void;
}

/** How often a held guard looks at the heap in use. */
const CHECK_EVERY_MS = 250;

const mb = (bytes: number) => Math.round(bytes / (1024 * 1024));

/**
 * Memory push-back: holds every partition's intake while the live heap is close to V8's
 * limit, so that a heap cap (`--max-old-space-size`, or a container's memory limit) slows
 * the worker down instead of ending it with "heap out of memory". Records in flight are bounded per
 * partition (HIGH_WATER, HIGH_WATER_BYTES); this bounds what all partitions add up to,
 * whatever their number or their messages' sizes.
 *
 * The signal is the heap left alive by a major GC (garbage does not count), with records
 * in flight. Intake resumes once the heap in use, an upper bound of what is alive, falls to
 * the resume line, or once nothing is in flight: holding then frees nothing more. The rest
 * of the heap (clients, code, caches) is not the records', and a hold that waited for it
 * to shrink would last for ever while major GCs kept coming; and once the graphs are idle,
 * V8 may not collect at all, leaving garbage above the line. If the records taken in
 * after resuming bring the live heap back up, the next major GC holds intake again.
 */
export class HeapGuard {
  private high = false;
  private timer: TimerHandle | undefined;

  constructor(
    private readonly settings: HeapGuardSettings,
    private readonly deps: HeapGuardDeps,
  ) {}

  get isHigh(): boolean {
    return this.high;
  }

  /** Called after each major (mark-compact) GC. */
  afterMajorGc(): void {
    const r = this.deps.read();
    if (!this.high && r.usedBytes >= this.settings.pauseRatio * r.limitBytes && this.deps.inFlight() > 0) {
      this.change(true, r, 'live-heap-high');
      this.schedule();
    } else this.check();
  }

  stop(): void {
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    if (!this.high) return;
    const r = this.deps.read();
    if (r.usedBytes <= this.settings.resumeRatio * r.limitBytes) this.change(false, r, 'heap-shrank');
    else if (this.deps.inFlight() === 0) this.change(false, r, 'drained');
  }

  private schedule(): void {
    this.stop();
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = undefined;
      this.check();
      if (this.high) this.schedule();
    }, CHECK_EVERY_MS);
  }

  private change(high: boolean, r: HeapReading, reason: HeapChange['reason']): void {
    this.high = high;
    if (!high) this.stop();
    this.deps.onChange({ high, usedMb: mb(r.usedBytes), limitMb: mb(r.limitBytes), reason });
  }
}

const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);
const SEMI_SPACE_FLAG = /--max-semi-space-size[= ](\d+)/;

/**
 * The old generation's limit. V8's heap_size_limit also counts the young generation (three
 * semi-spaces, 16 MB each by default on 64-bit Node 20), which the old generation cannot
 * use: a heap "out of memory" comes when the old generation alone reaches
 * `--max-old-space-size`, well below heap_size_limit.
 */
export function oldGenerationLimit(
  heapSizeLimit: number,
  flags: string = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`,
): number {
  const semiMb = [...flags.matchAll(new RegExp(SEMI_SPACE_FLAG, 'g'))].at(-1)?.[1];
  const young = 3 * (semiMb === undefined ? 16 : Number(semiMb)) * 1024 * 1024;
  return Math.max(heapSizeLimit - young, heapSizeLimit / 2);
}

/**
 * A reader of this process's V8 old generation. The limit is fixed for the life of the
 * process, so the flags are parsed once here rather than on every reading.
 */
export function v8HeapReader(): () => HeapReading {
  const limitBytes = oldGenerationLimit(getHeapStatistics().heap_size_limit);
  return () => {
    let used = 0;
    for (const space of getHeapSpaceStatistics())
      if (!YOUNG_SPACES.has(space.space_name)) used += space.space_used_size;
    return { usedBytes: used, limitBytes };
  };
}

/** Calls `fn` after every major GC of this process; returns the unsubscribe. */
export function onMajorGc(fn: () => void): () => void {
  const observer = new PerformanceObserver((list) => {
    const major = list
      .getEntries()
      .some(
        (e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR,
      );
    if (major) fn();
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}
