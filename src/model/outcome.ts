import type { ErrorClass, IngestMessage, OriginKey, RawRecord } from './message.js';
import type { OutRecord } from './out-record.js';

/** What became of one record: every record ends with exactly one. */
export type Outcome =
  /** Written to Elasticsearch; for an event, this record owns it (created it, or is its replay). */
  | { readonly kind: 'indexed' }
  /** A re-sent copy of an id that another record processed (`by`: its origin, or `window`). */
  | { readonly kind: 'duplicate'; readonly by: OriginKey | 'window' }
  /** A profile update that every stored field already outranks. */
  | { readonly kind: 'stale' }
  | { readonly kind: 'dead-letter'; readonly errorClass: ErrorClass; readonly reason: string }
  /** A tombstone under TOMBSTONES=ignore. */
  | { readonly kind: 'ignored' }
  /** A tombstone under TOMBSTONES=delete: the client's profile is gone. */
  | { readonly kind: 'deleted' }
  /** A gap the fetch skipped (transaction markers, aborted records): not a record at all. */
  | { readonly kind: 'skipped' };

export type OutcomeKind = Outcome['kind'];

/**
 * One record on its way through a partition's graph. Each stage decides only the entries
 * nobody decided yet and passes the others on untouched, so that every record reaches the
 * commit stage, in whatever order, exactly once.
 */
export interface Entry {
  readonly record: RawRecord;
  /** Its place in the partition's intake: the offset tracker's key. */
  readonly seq: number;
  /** The validated (and enriched) message; absent for poison, tombstones and gaps. */
  readonly message?: IngestMessage;
  /** A tombstone under TOMBSTONES=delete: the client whose profile it deletes. */
  readonly deletes?: string;
  readonly outcome?: Outcome;
}

/** A record that is durably done, with what must be published when its offset is committed. */
export interface Completion<P> {
  readonly seq: number;
  readonly payloads: readonly P[];
}

/** A finished entry, ready for the offset tracker, with its triggers or dead letter. */
export interface Done extends Completion<OutRecord> {
  readonly entry: Entry & { readonly outcome: Outcome };
}

/**
 * The one place an entry is built: all five fields, in this order, absent ones undefined,
 * rather than spread with one more. Every stage then sees one hidden class, its property
 * reads stay monomorphic, and no spread copies the object per stage.
 */
const entry = (
  record: RawRecord,
  seq: number,
  message: IngestMessage | undefined,
  deletes: string | undefined,
  outcome: Outcome | undefined,
): Entry => ({ record, seq, message, deletes, outcome });

/** A record as it enters a partition's graph, with its place in the intake. */
export const entryOf = (record: RawRecord, seq: number): Entry =>
  entry(record, seq, undefined, undefined, undefined);

export const decide = (e: Entry, outcome: Outcome): Entry =>
  entry(e.record, e.seq, e.message, e.deletes, outcome);

/** The entry with its (validated or enriched) message. */
export const withMessage = (e: Entry, message: IngestMessage): Entry =>
  entry(e.record, e.seq, message, e.deletes, e.outcome);

/** The entry of a tombstone that deletes `clientId`'s profile. */
export const withDeletes = (e: Entry, clientId: string): Entry =>
  entry(e.record, e.seq, e.message, clientId, e.outcome);

/** The client an entry is about (for per-client order), if any. */
export const clientOf = (entry: Entry): string | undefined => entry.message?.clientId ?? entry.deletes;
