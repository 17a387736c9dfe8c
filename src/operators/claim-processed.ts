import { concatMap, defer, from, type MonoTypeOperatorFunction, map, of } from 'rxjs';
import { classifyError } from '../model/failures.js';
import { type BatchEntry, decide, originOf } from '../model/outcome.js';
import type { ProcessedStore } from '../sinks/ports.js';
import { type RetryWithBackoffOptions, retryWithBackoff } from './backoff.js';

/**
 * After Elasticsearch confirmed a batch, marks its ids processed in one round
 * trip, first origin wins, and learns who owns each id. An event this record
 * owns stays indexed (and will trigger); an event another record owns is a
 * duplicate (its owner triggers). That covers the crash window between the
 * write and the mark: the replay finds its own mark, or no mark and a 409.
 *
 * The store must answer: ownership decides whether a trigger goes out, so a
 * failure is transient and retried with backoff (the partition's intake pauses
 * meanwhile, as its unfinished count reaches the high-water mark).
 *
 * ```
 * batches: --[a✓ b? c✓]--|        b existed (409); c's id is owned by another record
 * claimProcessed
 * output:  --[a✓ b✓ c']--|        b owned by itself (a replay) stays; c' = duplicate
 * ```
 */
export function claimProcessed(
  store: ProcessedStore,
  retry: Omit<RetryWithBackoffOptions, 'isRetryable'>,
): MonoTypeOperatorFunction<BatchEntry[]> {
  return concatMap((batch) =>
    defer(() => {
      const marked = batch
        .map((e, i) => [e, i] as const)
        .filter(([e]) => e.existed === true || e.outcome?.kind === 'indexed' || e.outcome?.kind === 'stale');
      if (marked.length === 0) return of(batch);
      const claims = marked.map(([e]) => ({
        id: e.envelope.message.id,
        origin: originOf(e.envelope.record),
      }));
      return from(store.claim(claims)).pipe(
        map((owners) => {
          const out = batch.slice();
          marked.forEach(([e, i], k) => {
            const owner = owners[k]!;
            const own = owner === originOf(e.envelope.record);
            if (e.envelope.message.type === 'event') {
              out[i] = own ? decide(e, { kind: 'indexed' }) : decide(e, { kind: 'duplicate', by: owner });
            }
          });
          return out;
        }),
      );
    }).pipe(retryWithBackoff({ ...retry, isRetryable: (err) => classifyError(err) === 'transient' })),
  );
}
