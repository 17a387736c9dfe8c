import { asyncScheduler, type Observable, type SchedulerLike } from 'rxjs';
import type { GraphSettings, TriggerRule } from '../config/config.js';
import type { RawRecord } from '../model/message.js';
import type { OffsetTracker } from '../model/offset-tracker.js';
import type { OutRecord } from '../model/out-record.js';
import type { Done } from '../model/outcome.js';
import { attachOutputs } from '../operators/attach-outputs.js';
import { type Commit, commitInOrder } from '../operators/commit-in-order.js';
import { dropRepeatsWithin } from '../operators/drop-repeats-within.js';
import { type Enrich, enrichInOrder } from '../operators/enrich-in-order.js';
import { observeOutcomes } from '../operators/observe-outcomes.js';
import { parseRecords } from '../operators/parse-records.js';
import { rebatch } from '../operators/rebatch.js';
import { rememberOwners } from '../operators/remember-owners.js';
import { skipKnownCopies } from '../operators/skip-known-copies.js';
import { trackIntake } from '../operators/track-intake.js';
import { writeDocuments } from '../operators/write-documents.js';
import { recordsPerCommit } from '../pushback/intake/marks.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import type { CommitSink, DocumentStore, KnownCopies } from '../sinks/ports.js';

/** The outside world of one partition's graph: real sinks in the worker, in-memory ones in tests. */
export interface PartitionPorts {
  readonly known: KnownCopies;
  readonly documents: DocumentStore;
  readonly commits: CommitSink;
  readonly enrich: Enrich;
}

export interface PartitionOptions {
  readonly settings: GraphSettings;
  readonly rules: readonly TriggerRule[];
  readonly topics: { readonly triggers: string; readonly dlq: string };
  /** Shared with the intake, which reads `unfinished` for backpressure. */
  readonly tracker: OffsetTracker<OutRecord>;
  /** The one retry policy (enrich retries; the sinks hold their own reference). */
  readonly retry: RetryPolicy;
  /** The partition's highest committed offset ever: below it, outputs were already sent. */
  readonly replayedBelow?: string;
  /** Aborts retries in flight (shutdown, partition lost). */
  readonly signal?: AbortSignal;
  /** How many partitions' worth of batches this one may write at once (see partitionShare); 1 if absent. */
  readonly share?: () => number;
  /** Sees every batch of finished records (metrics). */
  readonly onDone?: (batch: Done[]) => void;
  readonly scheduler?: SchedulerLike;
}

const ignore = () => {};

/** BATCHES_IN_FLIGHT, scaled by the partition's share of the worker's budget. */
const batchesInFlight = (s: GraphSettings, share?: () => number) =>
  share === undefined ? s.batchesInFlight : () => s.batchesInFlight * Math.max(1, share());

/** Batches waiting for a write slot are joined up to a full batch and BATCH_JOIN_BYTES (0: never). */
const joinLimit = (s: GraphSettings) =>
  s.batchJoinBytes > 0 ? { entries: s.batchMax, bytes: s.batchJoinBytes } : undefined;

/**
 * One partition's ingestion graph, top to bottom. Every record enters as an entry and
 * leaves decided — indexed, duplicate, stale, dead-letter (or, for tombstones and gaps,
 * deleted, ignored, skipped) — which is what lets the offset tracker commit in order.
 * Each stage decides only the entries nobody decided yet and passes the rest on.
 *
 * Emits each commit once it is durable, and completes after the source completes and
 * everything is drained and committed.
 */
export function ingestPartition(
  records$: Observable<RawRecord>,
  ports: PartitionPorts,
  options: PartitionOptions,
): Observable<Commit> {
  const { settings: s, tracker, retry, signal, scheduler = asyncScheduler } = options;

  const batches$ = records$.pipe(
    // register each offset with the tracker, in order
    trackIntake(tracker),
    // JSON + schema + size; poison is a dead letter, a tombstone follows TOMBSTONES
    parseRecords({ maxMessageBytes: s.maxMessageBytes, tombstones: s.tombstones }),
    // ids seen in the last DEDUP_WINDOW_MS are duplicates (bounded memory)
    dropRepeatsWithin(s.dedupWindowMs, scheduler),
    // one client at a time in offset order, clients concurrently
    enrichInOrder(ports.enrich, { idleCloseMs: s.clientIdleMs, retry, scheduler }),
    // BATCH_MAX entries, or BATCH_MS after a batch's first
    rebatch(s.batchMax, s.batchMs, scheduler),
  );

  return batches$.pipe(
    // events Redis knows another record owns are duplicates (an optimisation only, paced
    // while it finds none)
    skipKnownCopies(ports.known, { backoffMaxMs: s.redisLookupBackoffMs, scheduler }),
    // events created with their origin, profiles merged, tombstones applied (Elasticsearch);
    // batches that wait for a write slot go together, within BATCH_MAX and BATCH_JOIN_BYTES
    writeDocuments(ports.documents, {
      batchesInFlight: batchesInFlight(s, options.share),
      joinUpTo: joinLimit(s),
      signal,
    }),
    // tell Redis who owns each event
    rememberOwners(ports.known),
    // triggers of owned events and dead letters, except for replays of committed work
    attachOutputs({ rules: options.rules, topics: options.topics, replayedBelow: options.replayedBelow }),
    // what became of each record (metrics)
    observeOutcomes(options.onDone ?? ignore),
    // offset N+1 once every record ≤ N is done, with its outputs, in one transaction
    // (or a batch window after the partition went quiet with a batch's worth committable)
    commitInOrder(tracker, ports.commits, {
      intervalMs: s.commitIntervalMs,
      every: recordsPerCommit(s),
      quiet: { ms: s.batchMs, records: s.batchMax },
      scheduler,
    }),
  );
}
