import { concatMap, from, type MonoTypeOperatorFunction, map, of } from 'rxjs';
import { type BatchEntry, decide, originOf } from '../model/outcome.js';
import type { ProcessedStore } from '../sinks/ports.js';

/**
 * Asks the processed-id store, in one round trip per batch, which ids another
 * record already processed, and decides those entries as duplicates. An id
 * marked by this very record (same topic/partition/offset) is a replay after a
 * crash, not a copy: it goes on, so that its side effects are completed.
 *
 * ```
 * batches: --[a b c]--|      b was processed by another record, c by itself
 * skipProcessed
 * output:  --[a b' c]--|     b' = b decided { kind: 'duplicate' }; a and c go on
 * ```
 */
export function skipProcessed(store: ProcessedStore): MonoTypeOperatorFunction<BatchEntry[]> {
  return concatMap((batch) => {
    const open = batch.filter((e) => e.outcome === undefined);
    if (open.length === 0) return of(batch);
    return from(store.lookup(open.map((e) => e.envelope.message.id))).pipe(
      map((marks) =>
        marks.size === 0
          ? batch
          : batch.map((e) => {
              if (e.outcome !== undefined) return e;
              const by = marks.get(e.envelope.message.id);
              return by !== undefined && by !== originOf(e.envelope.record)
                ? decide(e, { kind: 'duplicate', by })
                : e;
            }),
      ),
    );
  });
}
