import { from, type MonoTypeOperatorFunction, map, mergeMap, of } from 'rxjs';
import { originKeyOf, type UserEvent } from '../model/message.js';
import { decide, type Entry } from '../model/outcome.js';
import type { KnownCopies } from '../sinks/ports.js';

/**
 * Asks the fast memory of owners (Redis), in one round trip per batch, which open events
 * another record already owns, and decides those entries duplicates without a trip to
 * Elasticsearch. An event owned by this very record (same topic/partition/offset) is a
 * replay after a crash, not a copy: it goes on, so its side effects are completed. The
 * store may not know (down, flushed, expired): then Elasticsearch decides.
 *
 * ```
 * batches: --[a b c p]--|      b is owned by another record, c by itself; p a profile
 * skipKnownCopies
 * output:  --[a b' c p]--|     b' = b decided { kind: 'duplicate', by: <owner> }
 * ```
 */
export function skipKnownCopies(known: KnownCopies): MonoTypeOperatorFunction<Entry[]> {
  return mergeMap((batch) => {
    const events: UserEvent[] = [];
    for (const e of batch) if (e.outcome === undefined && e.message?.type === 'event') events.push(e.message);
    if (events.length === 0) return of(batch);
    return from(known.owners(events)).pipe(
      map((owners) => {
        if (owners.size === 0) return batch;
        return batch.map((e) => {
          if (e.outcome !== undefined || e.message?.type !== 'event') return e;
          const by = owners.get(e.message.id);
          return by !== undefined && by !== originKeyOf(e.record) ? decide(e, { kind: 'duplicate', by }) : e;
        });
      }),
    );
  }, 1);
}
