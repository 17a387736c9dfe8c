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
