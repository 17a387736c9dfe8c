import type { ObservableInput } from 'rxjs';
import type { OutRecord } from '../model/out-record.js';
import type { MergedUpdate } from '../model/profile-merge.js';

/**
 * The narrow interfaces between the graph and the outside world. The worker
 * plugs in Redis, Elasticsearch and Kafka (promises); marble tests and
 * benchmarks plug in the in-memory versions from `test/support/in-memory-ports.ts`,
 * which answer synchronously so that TestScheduler's virtual time covers the whole graph.
 */

export type { OutRecord };

/**
 * Remembers which message ids were processed, and by which record ("origin":
 * topic/partition/offset). The origin is what tells a replay of the same record
 * (after a crash) from a re-sent copy at another offset.
 */
export interface ProcessedStore {
  /** The origin that processed each id, for the ids that are known. Never throws: unknown on failure. */
  lookup(ids: readonly string[]): ObservableInput<ReadonlyMap<string, string>>;
  /**
   * Records `origin` as the processor of `id` unless another origin already is,
   * and returns the owner of each id (in the same order). All or nothing: throws
   * if the store cannot answer, since ownership decides whether a trigger is sent.
   */
  claim(entries: readonly { readonly id: string; readonly origin: string }[]): ObservableInput<string[]>;
}

export interface EventDocument {
  readonly id: string;
  readonly source: { clientId: string; name: string; ts: string; data: Readonly<Record<string, unknown>> };
}

export type EventWrite =
  | { readonly status: 'created' | 'exists' }
  | { readonly status: 'rejected'; readonly reason: string };
export type ProfileWrite =
  | { readonly status: 'applied' | 'stale' }
  | { readonly status: 'rejected'; readonly reason: string };

/**
 * Where documents go. Transient failures (429, 5xx, connection errors, version
 * conflicts on profiles) are retried inside, per item; what comes back is final.
 */
export interface DocumentStore {
  createEvents(events: readonly EventDocument[], signal?: AbortSignal): ObservableInput<EventWrite[]>;
  mergeProfiles(updates: readonly MergedUpdate[], signal?: AbortSignal): ObservableInput<ProfileWrite[]>;
}

/** Publishes records and commits a partition's offset in one atomic step. */
export interface CommitSink {
  /** Answers one value (anything) once the commit is durable. */
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
}
