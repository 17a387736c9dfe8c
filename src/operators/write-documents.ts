import {
  concat,
  defer,
  forkJoin,
  from,
  type MonoTypeOperatorFunction,
  map,
  mergeMap,
  type Observable,
  of,
  reduce,
} from 'rxjs';
import { type OriginKey, originKeyOf, type ProfileUpdate, type UserEvent } from '../model/message.js';
import type { Entry, Outcome } from '../model/outcome.js';
import { mergeUpdates } from '../model/profile-merge.js';
import {
  contributes,
  type Decision,
  decideAt,
  planWrites,
  type WriteRound,
  writesAlone,
  writesNothing,
} from '../model/write-plan.js';
import { recordBytes } from '../pushback/intake/bytes-in-flight.js';
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
 * is a 409 and a re-read); tombstones are the exception (see writesAlone).
 *
 * The plan is made first (planWrites); the events and the profiles are then written side by
 * side, each returning its decisions, and the batch comes out with all of them applied.
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
        const plan = planWrites(batch);
        if (writesNothing(plan)) return of(batch);
        return forkJoin([
          createEvents(store, batch, plan.events, signal),
          writeProfiles(store, batch, plan.rounds, signal),
        ]).pipe(map(([events, profiles]) => decideAt(batch, events.concat(profiles))));
      }),
    {
      concurrency: batchesInFlight,
      alone: writesAlone,
      ...(joinUpTo ? { join: joinWithin(joinUpTo) } : {}),
    },
  );
}

/** How large a joined batch may grow: entries, and the bytes of their records' keys and values. */
export interface JoinLimit {
  readonly entries: number;
  readonly bytes: number;
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

/** Runs steps one after the other and gathers their decisions. */
const inTurn = (steps: Observable<Decision[]>[]): Observable<Decision[]> =>
  concat(...steps).pipe(reduce((all: Decision[], some) => all.concat(some), []));

/** Outcomes without details are shared, not one object per record (they are read, never changed). */
const INDEXED: Outcome = { kind: 'indexed' };
const STALE: Outcome = { kind: 'stale' };

const rejected = (reason: string): Outcome => ({ kind: 'dead-letter', errorClass: 'rejected', reason });

/** Creates the batch's open events, each with its origin, and decides them. */
function createEvents(
  store: DocumentStore,
  batch: readonly Entry[],
  events: readonly number[],
  signal?: AbortSignal,
): Observable<Decision[]> {
  if (events.length === 0) return of([]);
  const docs = events.map((i) => eventDocumentOf(batch[i]!));
  return from(store.createEvents(docs, signal)).pipe(
    map((results) =>
      events.map((at, k): Decision => {
        const r = results[k]!;
        if (r.status === 'created') return { at, outcome: INDEXED };
        if (r.status === 'exists') return { at, outcome: ownedBy(batch[at]!, r.owner) };
        return { at, outcome: rejected(r.reason) };
      }),
    ),
  );
}

/**
 * The document an open event entry is created as: the event with its origin. Its `source` is
 * made each time it is read (once a request, in practice) rather than held: a batch's
 * documents wait as long as its write, and what waits that long is copied by the garbage
 * collector and then promoted; an object of one field is what waits here.
 */
export function eventDocumentOf(e: Entry): EventDocument {
  return new EventOfEntry(e);
}

class EventOfEntry implements EventDocument {
  constructor(private readonly entry: Entry) {}

  get id(): string {
    return (this.entry.message as UserEvent).id;
  }

  get source(): EventDocument['source'] {
    const m = this.entry.message as UserEvent;
    const { topic, partition, offset } = this.entry.record;
    return {
      clientId: m.clientId,
      name: m.name,
      ts: m.ts,
      data: m.data,
      origin: { topic, partition, offset: originOffset(offset) },
    };
  }
}

/** A JSON number while it is exact (always, in practice); the decimal string beyond 2^53. */
const originOffset = (offset: string): number | string => {
  const n = Number(offset);
  return Number.isSafeInteger(n) ? n : offset;
};

/** An existing event is this record's own (a replay) or another's (a re-sent copy). */
const ownedBy = (e: Entry, owner: OriginKey): Outcome =>
  owner === originKeyOf(e.record) ? INDEXED : { kind: 'duplicate', by: owner };

/** Carries out the profile rounds one after the other and decides their entries. */
function writeProfiles(
  store: DocumentStore,
  batch: readonly Entry[],
  rounds: readonly WriteRound[],
  signal?: AbortSignal,
): Observable<Decision[]> {
  if (rounds.length === 0) return of([]);
  return inTurn(rounds.map((round) => writeRound(store, batch, round, signal)));
}

function writeRound(
  store: DocumentStore,
  batch: readonly Entry[],
  round: WriteRound,
  signal?: AbortSignal,
): Observable<Decision[]> {
  // Deferred: a round's requests start only when the round before it (its deletes) is done.
  const updates$ =
    round.updates.length === 0 ? of([]) : defer(() => mergeClients(store, batch, round.updates, signal));
  const deletes$ =
    round.deletes.length === 0
      ? of([])
      : defer(() =>
          from(
            store.deleteProfiles(
              round.deletes.map((i) => batch[i]!.deletes!),
              signal,
            ),
          ).pipe(map(() => round.deletes.map((at): Decision => ({ at, outcome: { kind: 'deleted' } })))),
        );
  return inTurn([updates$, deletes$]);
}

/** Writes each client's updates merged into one, then isolates the clients whose merged update was refused. */
function mergeClients(
  store: DocumentStore,
  batch: readonly Entry[],
  clients: readonly (readonly number[])[],
  signal?: AbortSignal,
): Observable<Decision[]> {
  const merged = clients.map((places) => mergeUpdates(places.map((i) => batch[i]!.message as ProfileUpdate)));
  return from(store.mergeProfiles(merged, signal)).pipe(
    mergeMap((results) => {
      const decided: Decision[] = [];
      const refused: (readonly number[])[] = [];
      clients.forEach((places, k) => {
        const r = results[k]!;
        if (r.status === 'rejected') {
          if (places.length > 1) refused.push(places);
          else decided.push({ at: places[0]!, outcome: rejected(r.reason) });
          return;
        }
        for (const at of places) {
          const lost = r.status === 'stale' || !contributes(batch[at]!.message as ProfileUpdate, merged[k]!);
          decided.push({ at, outcome: lost ? STALE : INDEXED });
        }
      });
      if (refused.length === 0) return of(decided);
      return isolateRefused(store, batch, refused, signal).pipe(map((more) => decided.concat(more)));
    }),
  );
}

/** Writes refused clients' updates one message per client per request, until each is decided. */
function isolateRefused(
  store: DocumentStore,
  batch: readonly Entry[],
  refused: readonly (readonly number[])[],
  signal?: AbortSignal,
): Observable<Decision[]> {
  const longest = Math.max(...refused.map((places) => places.length));
  const steps = Array.from({ length: longest }, (_, j) =>
    defer(() => {
      const now = refused.filter((places) => j < places.length).map((places) => places[j]!);
      return from(
        store.mergeProfiles(
          now.map((i) => mergeUpdates([batch[i]!.message as ProfileUpdate])),
          signal,
        ),
      ).pipe(
        map((results) =>
          now.map((at, k): Decision => {
            const r = results[k]!;
            if (r.status === 'rejected') return { at, outcome: rejected(r.reason) };
            return { at, outcome: { kind: r.status === 'applied' ? 'indexed' : 'stale' } };
          }),
        ),
      );
    }),
  );
  return inTurn(steps);
}
