import { concatMap, forkJoin, from, type MonoTypeOperatorFunction, map, of } from 'rxjs';
import type { ProfileUpdate, UserEvent } from '../model/message.js';
import { type BatchEntry, decide } from '../model/outcome.js';
import { type MergedUpdate, mergeUpdates } from '../model/profile-merge.js';
import type { DocumentStore } from '../sinks/ports.js';

/**
 * Writes a batch to the document store: every event with `create` (its id is
 * the document id, so a second create answers "exists"), and the profile
 * updates merged first into one update per client (contract merge rule), so a
 * hot client costs one write per batch. Retries happen inside the store, per
 * item; what comes back is final: indexed, stale, existed, or rejected (dead
 * letter, class `rejected`, for that message only: a client's merged update that
 * Elasticsearch rejects is written again message by message, to find the bad one).
 *
 * ```
 * batches: --[e1 p1 p2 e2]--|        p1, p2: profile updates of one client
 * writeDocuments
 * output:  --[e1✓ p1✓ p2✓ e2?]--|    ✓ indexed; e2? existed (the claim decides whose it is)
 * ```
 */
export function writeDocuments(
  store: DocumentStore,
  signal?: AbortSignal,
): MonoTypeOperatorFunction<BatchEntry[]> {
  return concatMap((batch) => {
    const out = batch.slice();
    const events: number[] = [];
    const profilesByClient = new Map<string, number[]>();
    out.forEach((e, i) => {
      if (e.outcome !== undefined) return;
      if (e.envelope.message.type === 'event') events.push(i);
      else {
        const c = e.envelope.message.clientId;
        const idx = profilesByClient.get(c);
        if (idx === undefined) profilesByClient.set(c, [i]);
        else idx.push(i);
      }
    });

    const clients = [...profilesByClient.values()];
    const merged = clients.map((idx) =>
      mergeUpdates(idx.map((i) => out[i]!.envelope.message as ProfileUpdate)),
    );
    if (events.length === 0 && clients.length === 0) return of(batch);
    return forkJoin([
      events.length === 0
        ? of([])
        : from(
            store.createEvents(
              events.map((i) => {
                const m = out[i]!.envelope.message as UserEvent;
                return { id: m.id, source: { clientId: m.clientId, name: m.name, ts: m.ts, data: m.data } };
              }),
              signal,
            ),
          ),
      clients.length === 0 ? of([]) : from(store.mergeProfiles(merged, signal)),
    ]).pipe(
      map(([eventResults, profileResults]) => {
        events.forEach((i, k) => {
          const r = eventResults[k]!;
          const e = out[i]!;
          if (r.status === 'created') out[i] = decide(e, { kind: 'indexed' });
          else if (r.status === 'exists') out[i] = { ...e, existed: true };
          else if ('reason' in r)
            out[i] = decide(e, { kind: 'dead-letter', errorClass: 'rejected', reason: r.reason });
        });
        // A merged update rejected as a whole is retried message by message below, so that
        // one bad update does not take its client's other updates of the batch down with it.
        const isolate: number[] = [];
        clients.forEach((idx, k) => {
          const r = profileResults[k]!;
          for (const i of idx) {
            const e = out[i]!;
            if (r.status === 'rejected') {
              if (idx.length > 1) isolate.push(i);
              else out[i] = decide(e, { kind: 'dead-letter', errorClass: 'rejected', reason: r.reason });
            } else if (
              r.status === 'stale' ||
              !contributes(e.envelope.message as ProfileUpdate, merged[k]!)
            ) {
              out[i] = decide(e, { kind: 'stale' });
            } else out[i] = decide(e, { kind: 'indexed' });
          }
        });
        return { out, isolate };
      }),
      concatMap(({ out, isolate }) =>
        isolate.length === 0
          ? of(out)
          : from(
              store.mergeProfiles(
                isolate.map((i) => mergeUpdates([out[i]!.envelope.message as ProfileUpdate])),
                signal,
              ),
            ).pipe(
              map((results) => {
                isolate.forEach((i, k) => {
                  const r = results[k]!;
                  const e = out[i]!;
                  out[i] =
                    r.status === 'rejected'
                      ? decide(e, { kind: 'dead-letter', errorClass: 'rejected', reason: r.reason })
                      : decide(e, { kind: r.status === 'applied' ? 'indexed' : 'stale' });
                });
                return out;
              }),
            ),
      ),
    );
  });
}

/** Whether an update wins at least one field within its batch (else it is outranked on arrival). */
function contributes(own: ProfileUpdate, merged: MergedUpdate): boolean {
  const fields = Object.keys(own.data);
  if (fields.length === 0) return merged.version === own.version;
  return fields.some((f) => merged.fields.get(f)?.stamp.id === own.id);
}
