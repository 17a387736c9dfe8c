/** What changed with the latest sample: the condition became established, or ended. */
export type SustainedChange = 'started' | 'ended' | undefined;

/**
 * A condition that counts only once it has held, sample after sample, for
 * `holdMs` ("utilisation above 80% for a minute"): one `started` when it has,
 * one `ended` at the first sample where it no longer holds. A single dip
 * below restarts the wait. Time comes in with each sample, so tests drive it
 * with a fake clock.
 */
export class SustainedCondition {
  private since: number | undefined;
  private active = false;

  constructor(private readonly holdMs: number) {}

  /** Whether the condition has held for `holdMs` and not yet ended. */
  get isActive(): boolean {
    return this.active;
  }

  /** How long the condition has held without a break, at `nowMs` (0 when it does not hold). */
  heldFor(nowMs: number): number {
    return this.since === undefined ? 0 : nowMs - this.since;
  }

  sample(holds: boolean, nowMs: number): SustainedChange {
    if (!holds) {
      this.since = undefined;
      if (!this.active) return undefined;
      this.active = false;
      return 'ended';
    }
    this.since ??= nowMs;
    if (this.active || nowMs - this.since < this.holdMs) return undefined;
    this.active = true;
    return 'started';
  }
}
