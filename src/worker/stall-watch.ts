/**
 * Whether a partition is stalled: it has work waiting (lag, or records not yet committed)
 * and has made no progress (a commit) for `timeoutMs`. A partition with nothing waiting is
 * never stalled, however long it is idle. `check` answers only changes, so the caller logs
 * one line when a stall starts and one when it ends.
 */
export class StallWatch {
  private lastProgress: number;
  private stalled = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.lastProgress = now();
  }

  /** A commit moved the partition on. */
  progressed(): void {
    this.lastProgress = this.now();
  }

  /** `waiting`: lag or unfinished records now. Returns the new state when it changed. */
  check(waiting: boolean): { stalled: boolean; idleForMs: number } | undefined {
    const now = this.now();
    if (!waiting) this.lastProgress = now;
    const idleForMs = now - this.lastProgress;
    const stalled = waiting && idleForMs >= this.timeoutMs;
    if (stalled === this.stalled) return undefined;
    this.stalled = stalled;
    return { stalled, idleForMs };
  }
}
