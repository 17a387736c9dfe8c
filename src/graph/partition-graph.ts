import {
  asyncScheduler,
  concatMap,
  connect,
  filter,
  finalize,
  from,
  map,
  merge,
  mergeAll,
  type Observable,
  type SchedulerLike,
  Subject,
  take,
  tap,
} from 'rxjs';
import type { GraphSettings, TriggerRule } from '../config/config.js';
import type { Envelope, Poison, RawRecord } from '../model/message.js';
import { OffsetTracker } from '../model/offset-tracker.js';
import type { RecordDone } from '../model/outcome.js';
import type { Parsed } from '../model/parse.js';
import { claimProcessed } from '../operators/claim-processed.js';
import { type CommitRequest, commitInOrder } from '../operators/commit-in-order.js';
import { deadLetter } from '../operators/dead-letter.js';
import { distinctWithin } from '../operators/distinct-within.js';
import { emitTriggers } from '../operators/emit-triggers.js';
import { type Enrich, enrichInOrder } from '../operators/enrich-in-order.js';
import { parseRecords } from '../operators/parse-records.js';
import { rebatch } from '../operators/rebatch.js';
import { skipProcessed } from '../operators/skip-processed.js';
import { trackIntake } from '../operators/track-intake.js';
import { writeDocuments } from '../operators/write-documents.js';
import type { CommitSink, DocumentStore, OutRecord, ProcessedStore } from '../sinks/ports.js';

/** The outside world of one partition's graph: real sinks in the worker, in-memory ones in tests. */
export interface PartitionPorts {
  readonly processed: ProcessedStore;
  readonly documents: DocumentStore;
  readonly commits: CommitSink;
  readonly enrich: Enrich;
}

export interface PartitionOptions {
  readonly settings: GraphSettings;
  readonly rules: readonly TriggerRule[];
  readonly topics: { readonly triggers: string; readonly dlq: string };
  /** Shared with the source, which reads `pending` for backpressure. */
  readonly tracker: OffsetTracker<OutRecord>;
  /** Aborts retries in flight (shutdown, partition lost). */
  readonly signal?: AbortSignal;
  /** Sees every finished record (metrics, backpressure). */
  readonly onDone?: (done: RecordDone) => void;
  readonly scheduler?: SchedulerLike;
}

/**
 * One partition's ingestion graph, top to bottom:
 *
 *   source → track offsets → parse → drop re-sent ids within the window →
 *   enrich, in order per client → rebatch → skip processed ids (Redis) →
 *   write to Elasticsearch (events created, profiles merged) → claim ids (Redis) →
 *   triggers → commit in order, with triggers and dead letters, in one transaction
 *
 * Poison leaves after parse for the dead-letter topic; duplicates inside the
 * window leave at `distinctWithin`. Every record ends as exactly one RecordDone,
 * which is what lets the offset tracker commit in order.
 *
 * Emits each commit once it is durable, and completes after the source
 * completes and everything is drained and committed.
 */
export function ingestPartition(
  records$: Observable<RawRecord>,
  ports: PartitionPorts,
  { settings: s, rules, topics, tracker, signal, onDone, scheduler = asyncScheduler }: PartitionOptions,
): Observable<CommitRequest<OutRecord>> {
  const retry = { baseMs: s.retryBaseMs, maxMs: s.retryMaxMs, scheduler };

  return records$.pipe(
    trackIntake(tracker),
    parseRecords(s.maxMessageBytes),
    // Subscribe every branch before the first record flows.
    connect((parsed$): Observable<RecordDone> => {
      const windowDuplicates$ = new Subject<RecordDone>();

      const deadLetters$ = parsed$.pipe(filter(isPoison), deadLetter(topics.dlq));

      const unique$ = parsed$.pipe(
        filter(isValid),
        map((p) => p.envelope),
        distinctWithin(idOf, s.dedupWindowMs, {
          onDuplicate: (e) => windowDuplicates$.next(duplicateWithinWindow(e)),
          scheduler,
        }),
      );

      const indexed$ = unique$.pipe(
        enrichInOrder(ports.enrich, { idleCloseMs: s.clientIdleMs, scheduler }),
        rebatch(s.batchMax, s.batchMs, scheduler),
        skipProcessed(ports.processed),
        writeDocuments(ports.documents, signal),
        claimProcessed(ports.processed, retry),
        emitTriggers(rules, topics),
        mergeAll(),
        finalize(() => windowDuplicates$.complete()),
      );

      return merge(windowDuplicates$, deadLetters$, indexed$);
    }),
    tap(onDone),
    commitInOrder(tracker, { intervalMs: s.commitIntervalMs, every: s.commitEvery, scheduler }),
    concatMap((request) =>
      from(ports.commits.commit(request.offset, request.payloads)).pipe(
        take(1),
        map(() => request),
      ),
    ),
  );
}

const isPoison = (p: Parsed): p is { ok: false } & Poison => !p.ok;
const isValid = (p: Parsed): p is Extract<Parsed, { ok: true }> => p.ok;
const idOf = (e: Envelope) => e.message.id;
const duplicateWithinWindow = (e: Envelope): RecordDone => ({
  offset: e.record.offset,
  payloads: [],
  kind: 'duplicate',
  clientId: e.message.clientId,
});

export { OffsetTracker };
