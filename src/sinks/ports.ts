import type { ObservableInput } from 'rxjs';
import type { OriginKey } from '../model/message.js';
import type { OutRecord } from '../model/out-record.js';
import type { MergedUpdate } from '../model/profile-merge.js';

/**
 * The narrow interfaces between the graph and the outside world. The worker plugs in
 * Redis, Elasticsearch and Kafka (promises); marble tests and benchmarks plug in the
 * in-memory versions from `test/support/in-memory-ports.ts`, which answer synchronously so
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

/**
 * Admission of every request to a destination: the worker-wide adaptive concurrency limit
 * and the circuit breaker (implemented in src/control/request-gate.ts). A store acquires a
 * pass before each request, first tries and retries alike (so that retries never add load
 * outside the limit), releases it once the answer is in, and sleeps its backoff without
 * holding one. While the breaker is open, acquire() waits: no request goes out, no retry
 * loop spins.
 */
export interface RequestGate {
  /** Resolves when the request may go. Rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<RequestPass>;
}

export interface RequestPass {
  /** Exactly once, when the answer (or the failure) is in; later calls are ignored. */
  release(outcome: RequestOutcome): void;
}

export interface RequestOutcome {
  /**
   * - `ok`: answered, nothing pushed back (409s and refusals of bad documents included).
   * - `pushback`: answered, but load was refused: HTTP 429, or items with 429/5xx or
   *   `es_rejected_execution_exception` inside an HTTP 200 bulk answer.
   * - `failed`: no usable answer: connection error, timeout, 5xx, or every item refused for
   *   a destination fault (missing index, no privilege, blocked index, unavailable shard).
   * - `unsent`: abandoned before an answer (aborted): counts neither way.
   */
  readonly result: 'ok' | 'pushback' | 'failed' | 'unsent';
  /**
   * Whether the round trip says how loaded the destination's writes are (a bulk), so the
   * concurrency limit may learn from it; a read's (an mget) does not. Default true.
   */
  readonly timesWrites?: boolean;
}

/**
 * Admission of the calls to a server the worker can do without (Redis): a circuit breaker
 * that never waits. No pass means "do not call": take the fallback at once (for Redis,
 * "not known to be processed": Elasticsearch decides). Implemented in
 * src/control/request-gate.ts.
 */
export interface CallGate {
  tryPass(): CallPass | undefined;
}

export interface CallPass {
  /**
   * Exactly once: `ok` the server answered (a refusal such as OOM or READONLY is an
   * answer), `failed` it did not (timeout, connection refused or closed). Later calls are ignored.
   */
  release(result: 'ok' | 'failed'): void;
}
