/**
 * When commitInOrder commits: at most `intervalMs` after something first became committable,
 * at once when `every` records did, and sooner when the partition goes quiet (`quiet`).
 * Pure: the operator keeps the timers and asks this what to do whenever what it knows changes.
 */
export interface CommitPolicy {
  /** Commit at most this long after something first became committable… */
  readonly intervalMs: number;
  /** …or as soon as this many records did. */
  readonly every: number;
  /**
   * …or `ms` after the partition went quiet with at least `records` committable: everything
   * it took in is done, and it took in nothing more meanwhile (the end of a backlog or a
   * burst). Without it the last records of a burst wait out the rest of `intervalMs`.
   */
  readonly quiet?: { readonly ms: number; readonly records: number };
}

/** What the commit stage knows when it asks, between commits (none in flight). */
export interface CommitState {
  /** Records that became committable since the last commit was taken. */
  readonly released: number;
  /** Records taken in and not done yet. */
  readonly pending: number;
  /** The source completed: what is committable is flushed. */
  readonly sourceDone: boolean;
}

/**
 * What to do now:
 * - `commit`: take a commit (with nothing committable, a completed source completes);
 * - `wait`: keep (or start) the interval timer and, with `quietMs`, (re)start the quiet wait;
 * - `idle`: nothing is committable, nothing to wait for.
 */
export type CommitStep =
  | { readonly kind: 'commit' }
  | { readonly kind: 'wait'; readonly quietMs?: number }
  | { readonly kind: 'idle' };

export function nextCommitStep(policy: CommitPolicy, state: CommitState): CommitStep {
  if (state.sourceDone || state.released >= policy.every) return { kind: 'commit' };
  if (state.released === 0) return { kind: 'idle' };
  return quietApplies(policy, state) ? { kind: 'wait', quietMs: policy.quiet!.ms } : { kind: 'wait' };
}

/**
 * Whether the quiet wait runs: it is shorter than the interval, a burst's worth of records is
 * committable, and every record taken in is done. A trickle of records never gathers
 * `quiet.records` and keeps to the interval, so quiet commits do not multiply transactions at
 * low traffic.
 */
function quietApplies({ quiet, intervalMs }: CommitPolicy, { released, pending }: CommitState): boolean {
  if (quiet === undefined || quiet.ms >= intervalMs) return false;
  return released >= quiet.records && pending === 0;
}

/** What the partition's intake looked like: when the quiet wait started, and when it ends. */
export interface IntakeState {
  /** Records taken in and not done yet. */
  readonly pending: number;
  /** Records taken in since the partition started. */
  readonly registered: number;
}

/** Whether the partition stayed quiet over the wait: nothing came in, and everything is still done. */
export const stayedQuiet = (then: IntakeState, now: IntakeState): boolean =>
  now.pending === 0 && now.registered === then.registered;
