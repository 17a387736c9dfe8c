import type { ObservableInput } from 'rxjs';
import type { OriginKey } from '../model/message.js';
import type { OutRecord } from '../model/out-record.js';
import type { MergedUpdate } from '../model/profile-merge.js';

/**
 * The narrow interfaces between the graph and the outside world. The worker plugs in
 * Redis, Elasticsearch and Kafka (promises); marble tests and benchmarks plug in the
 * in-memory versions from `test/support/fakes/in-memory-ports.ts`, which answer synchronously so
 * that TestScheduler's virtual time covers the whole graph.
 */

export type { OutRecord };

/** An event as the fast path knows it: its id, and its `ts` (which picks its index). */
export interface EventKey {
  readonly id: string;
  readonly ts: string;
}

/**
 * A fast memory (Redis) of which record owns which event id, so that known re-sent copies
 * skip Elasticsearch. Only an optimisation: Elasticsearch's `origin` decides ownership, so
 * every answer may be "unknown", and nothing here ever fails a record.
 */
export interface KnownCopies {
  /** The owner of each event id it knows (id → origin). Never throws: unknown on any failure. */
  owners(events: readonly EventKey[]): ObservableInput<ReadonlyMap<string, OriginKey>>;
  /** Remembers owners learnt from Elasticsearch. Best effort: never throws, never waits long. */
  remember(
    owners: readonly { readonly event: EventKey; readonly owner: OriginKey }[],
  ): ObservableInput<unknown>;
}

/** `{ topic, partition, offset }` of the record that created an event document (contract). */
export interface Origin {
  readonly topic: string;
  readonly partition: number;
  /** A number; a decimal string for an offset beyond 2^53, which a JSON number cannot hold exactly. */
  readonly offset: number | string;
}

export interface EventDocument {
  readonly id: string;
  readonly source: {
    readonly clientId: string;
    readonly name: string;
    readonly ts: string;
    readonly data: Readonly<Record<string, unknown>>;
    readonly origin: Origin;
  };
}

export type EventWrite =
  | { readonly status: 'created' }
  /** The id was there already (a 409): `owner` is the origin that created it ('' if it has none). */
  | { readonly status: 'exists'; readonly owner: OriginKey }
  | { readonly status: 'rejected'; readonly reason: string };
export type ProfileWrite =
  | { readonly status: 'applied' | 'stale' }
  | { readonly status: 'rejected'; readonly reason: string };
export type ProfileDelete = { readonly status: 'deleted' | 'absent' };

/**
 * Where documents go. Transient failures — the destination's faults (429, 5xx, a missing or
 * blocked index, a lost privilege, connection loss) and lost races on profiles — are retried
 * inside, per item, until they succeed or the signal aborts; what comes back is final, and
 * `rejected` only ever means the document itself was refused.
 */
export interface DocumentStore {
  createEvents(events: readonly EventDocument[], signal?: AbortSignal): ObservableInput<EventWrite[]>;
  mergeProfiles(updates: readonly MergedUpdate[], signal?: AbortSignal): ObservableInput<ProfileWrite[]>;
  deleteProfiles(clientIds: readonly string[], signal?: AbortSignal): ObservableInput<ProfileDelete[]>;
}

/** Publishes records and commits a partition's offset in one atomic step. */
export interface CommitSink {
  /** Answers one value (anything) once the commit is durable; an error means it may not be. */
  commit(offset: string, records: readonly OutRecord[]): ObservableInput<unknown>;
}
