import { defaultIfEmpty, from, last, type MonoTypeOperatorFunction, map, mergeMap, of } from 'rxjs';
import { type OriginKey, originKeyOf, type UserEvent } from '../model/message.js';
import type { Entry } from '../model/outcome.js';
import type { KnownCopies } from '../sinks/ports.js';

/**
 * Tells the fast memory of owners (Redis) who owns each event Elasticsearch just decided,
 * in one round trip per batch, so that later copies skip Elasticsearch. Best effort: the
 * store never fails a batch (Elasticsearch's `origin` stays the truth), and entries pass
 * unchanged.
 *
 * ```
 * batches: --[a✓ b' p✓]--|     a created by this record, b' a copy of x's event, p a profile
 * rememberOwners
 * output:  --[a✓ b' p✓]--|     (store: a → this record, b → x)
 * ```
 */
export function rememberOwners(known: KnownCopies): MonoTypeOperatorFunction<Entry[]> {
  return mergeMap((batch) => {
    const owners: { event: UserEvent; owner: OriginKey }[] = [];
    for (const e of batch) {
      if (e.message?.type !== 'event') continue;
      const o = e.outcome;
      if (o?.kind === 'indexed') owners.push({ event: e.message, owner: originKeyOf(e.record) });
      else if (o?.kind === 'duplicate' && o.by !== 'window') owners.push({ event: e.message, owner: o.by });
    }
    if (owners.length === 0) return of(batch);
    // Whatever the store answers (nothing, many values), the batch goes on exactly once.
    return from(known.remember(owners)).pipe(
      defaultIfEmpty(null),
      last(),
      map(() => batch),
    );
  }, 1);
}
