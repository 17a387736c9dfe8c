import {
  asyncScheduler,
  defer,
  from,
  type MonoTypeOperatorFunction,
  map,
  mergeMap,
  of,
  type SchedulerLike,
} from 'rxjs';
import { FIRST_BACKOFF_MS, LookupPacing } from '../model/lookup-pacing.js';
import { originKeyOf, type UserEvent } from '../model/message.js';
import { decide, type Entry } from '../model/outcome.js';
import { createRetryPolicy } from '../retry/retry-policy.js';
import type { KnownCopies } from '../sinks/ports.js';

export interface SkipKnownCopiesOptions {
  /**
   * REDIS_LOOKUP_BACKOFF_MS: after lookups that find no copy, the longest wait before the
   * next (see LookupPacing); batches meanwhile go on unasked. 0: every batch is looked up.
   */
  readonly backoffMaxMs?: number;
  readonly scheduler?: SchedulerLike;
}

/**
 * Asks the fast memory of owners (Redis), in one round trip per batch, which open events
 * another record already owns, and decides those entries duplicates without a trip to
 * Elasticsearch. An event owned by this very record (same topic/partition/offset) is a
 * replay after a crash, not a copy: it goes on, so its side effects are completed. The
 * store may not know (down, flushed, expired): then Elasticsearch decides. While lookups
 * find no copy they are paced (LookupPacing): the batches between go on unasked, and
 * Elasticsearch decides their copies the same way.
 *
 * ```
 * batches: --[a b c p]--|      b is owned by another record, c by itself; p a profile
 * skipKnownCopies
 * output:  --[a b' c p]--|     b' = b decided { kind: 'duplicate', by: <owner> }
 *
 * batches: [a] 10ms [b] 50ms [c] 10ms [d]|    backoffMaxMs 100; nobody owns a, b, c, d
 * skipKnownCopies
 * output:  [a] 10ms [b] 50ms [c] 10ms [d]|    the store asked about a (none: wait 50 ms), not
 *                                             b; about c (none: wait 100 ms), not d
 * ```
 */
export function skipKnownCopies(
  known: KnownCopies,
  options: SkipKnownCopiesOptions = {},
): MonoTypeOperatorFunction<Entry[]> {
  const { backoffMaxMs = 0, scheduler = asyncScheduler } = options;
  const waitAfter = lookupWaits(backoffMaxMs);
  return (source) =>
    defer(() => {
      const pacing = new LookupPacing(waitAfter);
      return source.pipe(
        mergeMap((batch) => {
          if (!pacing.due(scheduler.now())) return of(batch);
          const events: UserEvent[] = [];
          for (const e of batch)
            if (e.outcome === undefined && e.message?.type === 'event') events.push(e.message);
          if (events.length === 0) return of(batch);
          return from(known.owners(events)).pipe(
            map((owners) => {
              const out = owners.size === 0 ? batch : decideCopies(batch, owners);
              pacing.answered(out !== batch, scheduler.now());
              return out;
            }),
          );
        }, 1),
      );
    });
}

/** The batch with the open events another record owns decided duplicates; the same batch if none. */
function decideCopies(batch: Entry[], owners: ReadonlyMap<string, string>): Entry[] {
  let copies = 0;
  const out = batch.map((e) => {
    if (e.outcome !== undefined || e.message?.type !== 'event') return e;
    const by = owners.get(e.message.id);
    if (by === undefined || by === originKeyOf(e.record)) return e;
    copies++;
    return decide(e, { kind: 'duplicate', by });
  });
  return copies === 0 ? batch : out;
}

/**
 * The waits between lookups that find no copy: the retry policy's capped exponential without
 * jitter, 50, 100, 200 … `backoffMaxMs` ms; none (every batch looked up) for 0.
 */
export function lookupWaits(backoffMaxMs: number): ((misses: number) => number) | undefined {
  return backoffMaxMs > 0
    ? createRetryPolicy({ baseMs: FIRST_BACKOFF_MS, maxMs: backoffMaxMs, random: () => 1 }).delay
    : undefined;
}
