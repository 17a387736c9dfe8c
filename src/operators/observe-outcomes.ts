import { type MonoTypeOperatorFunction, tap } from 'rxjs';
import type { Done } from '../model/outcome.js';

/**
 * Shows each batch of finished records to an observer (metrics: outcomes, dead letters by
 * class, end-to-end latency) on its way to the commit, unchanged. One call per batch, so
 * the per-record cost is the observer's own.
 *
 * ```
 * batches: --[a b]--[c]--|
 * observeOutcomes(see)
 * output:  --[a b]--[c]--|      see([a, b]), see([c])
 * ```
 */
export function observeOutcomes(see: (batch: Done[]) => void): MonoTypeOperatorFunction<Done[]> {
  return tap(see);
}
