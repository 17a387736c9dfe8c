import {
  concat,
  defer,
  forkJoin,
  from,
  last,
  type MonoTypeOperatorFunction,
  map,
  mergeMap,
  type Observable,
  of,
} from 'rxjs';
import { recordBytes } from '../model/bytes-in-flight.js';
import { type OriginKey, originKeyOf, type ProfileUpdate, type UserEvent } from '../model/message.js';
import { decide, type Entry } from '../model/outcome.js';
import { type MergedUpdate, mergeUpdates } from '../model/profile-merge.js';
import type { DocumentStore, EventDocument } from '../sinks/ports.js';
import { mergeMapWithBarriers } from './merge-map-with-barriers.js';

/**
 * Writes a batch to the document store and decides every open entry:
 *
 * - **events** with `create` and `origin` = this record (its id is the document id): created
 *   → indexed; already there → indexed if the stored `origin` is this record (a replay after
 *   a crash: its side effects still go out) or a duplicate of the record that created it;
 * - **profile updates** merged first into one update per client (contract merge rule), so a
 *   hot client costs one write per batch → indexed, or stale when every field is outranked;
 * - **tombstones** (TOMBSTONES=delete) in their place in the client's order: the updates
 *   before a client's tombstone are written, then its profile is deleted, then the updates
 *   after it are merged onto nothing.
 *
 * Up to `batchesInFlight` batches are written at once (BATCHES_IN_FLIGHT, 2 by default), a
 * batch with a tombstone alone, and batches come out as they are written, not in order: the
 * offset tracker commits in order. With `joinUpTo`, batches that wait meanwhile are joined,
 * within its entries and bytes. Writes do not depend on their order (events are created
 * once whoever comes first, profiles merge by version under a conditional write, a lost race
 * is a 409 and a re-read); tombstones are the exception (see hasTombstone).
 *
 * Retries happen inside the store, per item; what comes back is final. A refusal of the
 * document itself dead-letters that message only (class `rejected`): a client's merged
 * update that is refused is written again one message at a time (one write per message,
 * all refused clients side by side), so one bad update does not take the client's others
 * down with it.
 *
 * ```
 * batches: --[e1 p1 p2 e2 t]--|        p1, p2: updates of client c; t: c's tombstone; e2 a copy
 * writeDocuments
 * output:  --[e1✓ p1✓ p2✓ e2' t✓]--|   ✓ decided (indexed, deleted); e2' duplicate of its creator
 * ```
 */
export function writeDocuments(
  store: DocumentStore,
  options: WriteDocumentsOptions = {},
): MonoTypeOperatorFunction<Entry[]> {
  const { batchesInFlight = 1, joinUpTo, signal } = options;
  return mergeMapWithBarriers(
    (batch: Entry[]) =>
      defer(() => {
        const out = batch.slice();
        const plan = planBatch(out);
        if (plan.events.length === 0 && plan.rounds.length === 0) return of(batch);
        const events$ = plan.events.length === 0 ? of(null) : writeEvents(store, out, plan.events, signal);
        const profiles$ =
          plan.rounds.length === 0
            ? of(null)
            : concat(...plan.rounds.map((round) => writeRound(store, out, round, signal))).pipe(last());
        return forkJoin([events$, profiles$]).pipe(map(() => out));
      }),
    {
      concurrency: batchesInFlight,
      alone: hasTombstone,
      ...(joinUpTo ? { join: joinWithin(joinUpTo) } : {}),
    },
  );
}

/**
 * Joins a batch that arrives to the one waiting before it while both fit: in entries, and in
 * record bytes, so that a backlog of large records is not joined into one huge request body.
 */
function joinWithin(limit: JoinLimit): (waiting: Entry[], next: Entry[]) => Entry[] | undefined {
  const bytesOf = new WeakMap<Entry[], number>();
  const bytes = (batch: Entry[]) => {
    let n = bytesOf.get(batch);
    if (n === undefined) {
      n = 0;
      for (const e of batch) n += recordBytes(e.record.key, e.record.value);
      bytesOf.set(batch, n);
    }
    return n;
  };
  return (waiting, next) => {
    if (waiting.length + next.length > limit.entries) return undefined;
    const joinedBytes = bytes(waiting) + bytes(next);
    if (joinedBytes > limit.bytes) return undefined;
    const joined = waiting.concat(next);
    bytesOf.set(joined, joinedBytes);
    return joined;
  };
}

/** How large a joined batch may grow: entries, and the bytes of their records' keys and values. */
export interface JoinLimit {
  readonly entries: number;
  readonly bytes: number;
}

export interface WriteDocumentsOptions {
  /** Batches written at once (default 1); a function is asked as batches come and go. */
  readonly batchesInFlight?: number | (() => number);
  /**
   * Batches that wait while the writes are busy are joined up to these limits (the graph:
   * BATCH_MAX entries, BATCH_JOIN_BYTES); absent, the default, joins nothing. A batch costs
   * round trips whatever its size, so under load small batches (BATCH_MS) would otherwise
   * queue up one by one behind the writes, and their records' latency with them.
   */
  readonly joinUpTo?: JoinLimit;
  /** Aborts the store's waits and retries (the partition stopping). */
  readonly signal?: AbortSignal;
}

/**
 * A tombstone to apply: its batch is written alone, after every batch before it and before
 * any after it, since a delete and an update of one client in batches side by side could
 * land in either order.
 */
const hasTombstone = (batch: readonly Entry[]) =>
  batch.some((e) => e.outcome === undefined && e.deletes !== undefined);

/** One round of a batch's profile work: updates (per client, in offset order), then tombstones. */
interface Round {
  readonly updates: Map<string, number[]>;
  readonly deletes: number[];
}

function planBatch(out: readonly Entry[]): { events: number[]; rounds: Round[] } {
  const events: number[] = [];
  const rounds: Round[] = [];
  const roundOf = new Map<string, number>();
  const round = (r: number): Round => {
    while (rounds.length <= r) rounds.push({ updates: new Map(), deletes: [] });
    return rounds[r]!;
  };
  out.forEach((e, i) => {
    if (e.outcome !== undefined) return;
    if (e.deletes !== undefined) {
      const r = roundOf.get(e.deletes) ?? 0;
      round(r).deletes.push(i);
      roundOf.set(e.deletes, r + 1);
      return;
    }
    const m = e.message;
    if (m === undefined) return;
    if (m.type === 'event') {
      events.push(i);
      return;
    }
    const updates = round(roundOf.get(m.clientId) ?? 0).updates;
    const idx = updates.get(m.clientId);
    if (idx === undefined) updates.set(m.clientId, [i]);
    else idx.push(i);
  });
  return { events, rounds };
}

function writeEvents(
  store: DocumentStore,
  out: Entry[],
  idx: number[],
  signal?: AbortSignal,
): Observable<null> {
  const docs = idx.map((i) => eventDocumentOf(out[i]!));
  return from(store.createEvents(docs, signal)).pipe(
    map((results) => {
      idx.forEach((i, k) => {
        const r = results[k]!;
        const e = out[i]!;
        if (r.status === 'created') out[i] = decide(e, { kind: 'indexed' });
        else if (r.status === 'exists') out[i] = decide(e, ownedBy(e, r.owner));
        else out[i] = decide(e, { kind: 'dead-letter', errorClass: 'rejected', reason: r.reason });
      });
      return null;
    }),
  );
}

/** The document an open event entry is created as: the event with its origin. */
export function eventDocumentOf(e: Entry): EventDocument {
  const m = e.message as UserEvent;
  const { topic, partition, offset } = e.record;
  return {
    id: m.id,
    source: {
      clientId: m.clientId,
      name: m.name,
      ts: m.ts,
      data: m.data,
      origin: { topic, partition, offset: originOffset(offset) },
    },
  };
}

/** A JSON number while it is exact (always, in practice); the decimal string beyond 2^53. */
const originOffset = (offset: string): number | string => {
  const n = Number(offset);
  return Number.isSafeInteger(n) ? n : offset;
};

/** An existing event is this record's own (a replay) or another's (a re-sent copy). */
const ownedBy = (e: Entry, owner: OriginKey) =>
  owner === originKeyOf(e.record)
    ? ({ kind: 'indexed' } as const)
    : ({ kind: 'duplicate', by: owner } as const);

function writeRound(
  store: DocumentStore,
  out: Entry[],
  round: Round,
  signal?: AbortSignal,
): Observable<null> {
  const clients = [...round.updates.values()];
  // Deferred: a round's requests start only when the round before it (its deletes) is done.
  const updates$ = clients.length === 0 ? of(null) : defer(() => mergeClients(store, out, clients, signal));
  const deletes$ =
    round.deletes.length === 0
      ? of(null)
      : defer(() =>
          from(
            store.deleteProfiles(
              round.deletes.map((i) => out[i]!.deletes!),
              signal,
            ),
          ).pipe(
            map(() => {
              for (const i of round.deletes) out[i] = decide(out[i]!, { kind: 'deleted' });
              return null;
            }),
          ),
        );
  return concat(updates$, deletes$).pipe(last());
}

function mergeClients(
  store: DocumentStore,
  out: Entry[],
  clients: number[][],
  signal?: AbortSignal,
): Observable<null> {
  const merged = clients.map((idx) => mergeUpdates(idx.map((i) => out[i]!.message as ProfileUpdate)));
  return from(store.mergeProfiles(merged, signal)).pipe(
    mergeMap((results) => {
      const refused: number[][] = [];
      clients.forEach((idx, k) => {
        const r = results[k]!;
        if (r.status === 'rejected') {
          if (idx.length > 1) refused.push(idx);
          else
            out[idx[0]!] = decide(out[idx[0]!]!, {
              kind: 'dead-letter',
              errorClass: 'rejected',
              reason: r.reason,
            });
          return;
        }
        for (const i of idx) {
          const e = out[i]!;
          const lost = r.status === 'stale' || !contributes(e.message as ProfileUpdate, merged[k]!);
          out[i] = decide(e, { kind: lost ? 'stale' : 'indexed' });
        }
      });
      return refused.length === 0 ? of(null) : isolateRefused(store, out, refused, signal);
    }),
  );
}

/** Writes refused clients' updates one message per client per request, until each is decided. */
function isolateRefused(
  store: DocumentStore,
  out: Entry[],
  refused: number[][],
  signal?: AbortSignal,
): Observable<null> {
  const longest = Math.max(...refused.map((idx) => idx.length));
  const steps = Array.from({ length: longest }, (_, j) =>
    defer(() => {
      const now = refused.filter((idx) => j < idx.length).map((idx) => idx[j]!);
      return from(
        store.mergeProfiles(
          now.map((i) => mergeUpdates([out[i]!.message as ProfileUpdate])),
          signal,
        ),
      ).pipe(
        map((results) => {
          now.forEach((i, k) => {
            const r = results[k]!;
            out[i] = decide(
              out[i]!,
              r.status === 'rejected'
                ? { kind: 'dead-letter', errorClass: 'rejected', reason: r.reason }
                : { kind: r.status === 'applied' ? 'indexed' : 'stale' },
            );
          });
          return null;
        }),
      );
    }),
  );
  return concat(...steps).pipe(last());
}

/** Whether an update wins at least one field within its batch (else it is outranked on arrival). */
export function contributes(own: ProfileUpdate, merged: MergedUpdate): boolean {
  const fields = Object.keys(own.data);
  if (fields.length === 0) return merged.version === own.version;
  return fields.some((f) => merged.fields.get(f)?.stamp.id === own.id);
}
