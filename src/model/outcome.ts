import type { Envelope, ErrorClass, RawRecord } from './message.js';
import type { OutRecord } from './out-record.js';

/** What became of one record: every record ends with exactly one. */
export type Outcome =
  /** Written to Elasticsearch by this record (or by an earlier, uncommitted attempt of it). */
  | { readonly kind: 'indexed' }
  /** A re-sent copy of an id that another record already processed. */
  | { readonly kind: 'duplicate'; readonly by: string }
  /** A profile update that every stored field already outranks. */
  | { readonly kind: 'stale' }
  | { readonly kind: 'dead-letter'; readonly errorClass: ErrorClass; readonly reason: string };

export type OutcomeKind = Outcome['kind'];

/** A message of a batch on its way through the index stages. */
export interface BatchEntry {
  readonly envelope: Envelope;
  /** Set by the stage that decided it; later stages leave decided entries alone. */
  readonly outcome?: Outcome;
  /** Event already in Elasticsearch (409 on create): the claim decides whose it is. */
  readonly existed?: boolean;
}

/** A record that is durably done, with what must be published when its offset is committed. */
export interface Completion<P> {
  readonly offset: string;
  readonly payloads: readonly P[];
}

/** A finished record, ready for the offset tracker, with what to publish when it is committed. */
export interface RecordDone extends Completion<OutRecord> {
  readonly kind: OutcomeKind;
  readonly clientId?: string;
  /** The message's own `ts`, on indexed records: where end-to-end latency starts. */
  readonly ts?: string;
}

/** "topic/partition/offset": who processed an id; a replay has the same origin, a copy another. */
export const originOf = (r: Pick<RawRecord, 'topic' | 'partition' | 'offset'>): string =>
  `${r.topic}/${r.partition}/${r.offset}`;

export const decide = (entry: BatchEntry, outcome: Outcome): BatchEntry => ({ ...entry, outcome });
