/**
 * The keys admitted during the last `windowMs` milliseconds: the contract of the dedup
 * window, whether its keys live in a `Set` (operators/swept-seen-set.ts) or off the V8 heap
 * (windowed-id-set.ts).
 *
 * A key admitted at time `t` blocks the same key until `t + windowMs` (exclusive): at exactly
 * `t + windowMs` it is admitted again and starts a new window. Half-open windows make the
 * boundary unambiguous and let consecutive windows tile time without overlap.
 */
export interface WindowedSeenSet<K> {
  /** Records `key` and returns true unless it was admitted within the window; then returns false. */
  admit(key: K): boolean;
  /** Forgets every key whose window has ended. */
  evictExpired(): void;
  /** When every key held now will have expired; undefined when empty. */
  readonly emptyAt: number | undefined;
  /** How many keys are held (expired ones included until evicted). */
  readonly size: number;
  clear(): void;
}

export function assertWindow(windowMs: number): void {
  if (!Number.isFinite(windowMs) || windowMs <= 0) {
    throw new RangeError(`windowMs must be a finite number > 0, got ${windowMs}`);
  }
}
