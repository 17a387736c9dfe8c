/**
 * The two ladders of the graph benchmark (graph.ts): the same records through cumulative stages
 * of the real per-partition graph into no-op sinks, and through a plain imperative loop doing the
 * same work with the same model functions. Each rung runs in a process of its own
 * (graph-child.ts), as the graph runs alone in a worker.
 */
import { asyncScheduler, from, map, type Observable, of } from 'rxjs';
import type { GraphSettings } from '../src/config/config.js';
import { planBatch } from '../src/generator/workload.js';
import { ingestPartition } from '../src/graph/partition-graph.js';
import { timeOncePerTick } from '../src/graph/time-once-per-tick.js';
import { type OriginKey, originKeyOf, type ProfileUpdate, type RawRecord } from '../src/model/message.js';
import { OffsetTracker } from '../src/model/offset-tracker.js';
import { clientOf, decide, type Entry, type Outcome } from '../src/model/outcome.js';
import { parseRecord } from '../src/model/parse.js';
import { type MergedUpdate, mergeUpdates } from '../src/model/profile-merge.js';
import { compileTriggers, deadLetterRecord } from '../src/model/records.js';
import { createWindowedIdSet } from '../src/model/windowed-id-set.js';
import { contributes } from '../src/model/write-plan.js';
import { dropRepeatsWithin } from '../src/operators/drop-repeats-within.js';
import { type Enrich, enrichInOrder, identityEnrich } from '../src/operators/enrich-in-order.js';
import { parseRecords } from '../src/operators/parse-records.js';
import { rebatch } from '../src/operators/rebatch.js';
import { eventDocumentOf } from '../src/operators/write-documents.js';
import { recordsPerCommit } from '../src/pushback/intake/marks.js';
import { createRetryPolicy } from '../src/retry/retry-policy.js';
import type {
  CommitSink,
  DocumentStore,
  EventDocument,
  EventKey,
  EventWrite,
  KnownCopies,
  OutRecord,
  ProfileDelete,
  ProfileWrite,
} from '../src/sinks/ports.js';

const TOPICS = { triggers: 'bench.triggers', dlq: 'bench.dlq' };

// ------------------------------------------------------------------ no-op sinks

const NO_OWNERS: ReadonlyMap<string, OriginKey> = new Map();
const CREATED: EventWrite = { status: 'created' };
const APPLIED: ProfileWrite = { status: 'applied' };
const DELETED: ProfileDelete = { status: 'deleted' };

/** Answer at once, like the in-memory sinks, but keep nothing: what is left is the graph. */
const noopKnown: KnownCopies = {
  owners: (_events: readonly EventKey[]) => of(NO_OWNERS),
  remember: () => of(undefined),
};
const noopDocuments: DocumentStore = {
  createEvents: (events: readonly EventDocument[]) => of(events.map(() => CREATED)),
  mergeProfiles: (updates: readonly MergedUpdate[]) => of(updates.map(() => APPLIED)),
  deleteProfiles: (clientIds: readonly string[]) => of(clientIds.map(() => DELETED)),
};
const noopCommits: CommitSink = { commit: () => of(true) };
const noopGraphPorts = (enrich: Enrich) => ({
  known: noopKnown,
  documents: noopDocuments,
  commits: noopCommits,
  enrich,
});

/**
 * The enrichers the ladder runs with: the worker's default (identity), with which no entry waits
 * and no client lane opens, and one that answers at once but is not the identity, with which
 * every open entry goes through its client's lane (as with a user's synchronous enricher).
 */
export const LADDER_ENRICHERS = {
  identity: identityEnrich,
  sync: ((m) => m) as Enrich,
} as const;
export type LadderEnricher = keyof typeof LADDER_ENRICHERS;

/** The graph's one retry policy; nothing fails here, so it only has to exist. */
const retryPolicy = (s: GraphSettings) => createRetryPolicy({ baseMs: s.retryBaseMs, maxMs: s.retryMaxMs });

// ------------------------------------------------------------------ the Rx ladder

/** What trackIntake does, without a tracker: the stages below 5 have no commit to keep. */
const asEntry = (record: RawRecord, seq: number): Entry => ({ record, seq });

function rxStage(
  level: number,
  records: readonly RawRecord[],
  s: GraphSettings,
  enrich: Enrich,
): Observable<unknown> {
  const source = from(records);
  if (level === 5) {
    return ingestPartition(source, noopGraphPorts(enrich), {
      settings: s,
      rules: [],
      topics: TOPICS,
      tracker: new OffsetTracker<OutRecord>(),
      retry: retryPolicy(s),
      // As the worker's PartitionRunner runs it.
      scheduler: timeOncePerTick(asyncScheduler),
    });
  }
  const parsed = source.pipe(
    map(asEntry),
    parseRecords({ maxMessageBytes: s.maxMessageBytes, tombstones: s.tombstones }),
  );
  if (level === 1) return parsed;
  const unique = parsed.pipe(dropRepeatsWithin(s.dedupWindowMs));
  if (level === 2) return unique;
  const enriched = unique.pipe(enrichInOrder(enrich, { idleCloseMs: s.clientIdleMs, retry: retryPolicy(s) }));
  if (level === 3) return enriched;
  return enriched.pipe(rebatch(s.batchMax, s.batchMs));
}

export function runRx(
  level: number,
  records: readonly RawRecord[],
  s: GraphSettings,
  enrich: Enrich = identityEnrich,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let n = 0;
    rxStage(level, records, s, enrich).subscribe({
      next: () => {
        n++;
      },
      error: reject,
      complete: () => resolve(n),
    });
  });
}

// ------------------------------------------------------------------ the imperative ladder

/** The same work as the graph, as one loop: the floor. Returns what it emitted (for a sanity check). */
export function runLoop(
  level: number,
  records: readonly RawRecord[],
  s: GraphSettings,
  enrich: Enrich = identityEnrich,
): number {
  const seen = createWindowedIdSet(s.dedupWindowMs, Date.now);
  const queues = new Map<string, { items: Entry[]; head: number }>();
  const tracker = new OffsetTracker<OutRecord>();
  const triggersOf = compileTriggers(TOPICS.triggers, []);
  // As the graph does: commit by count (recordsPerCommit).
  const commitEvery = recordsPerCommit(s);
  let batch: Entry[] = [];
  let emitted = 0;
  let released = 0;
  let committed = 0;

  const commit = () => {
    const next = tracker.take();
    if (next === undefined) return;
    // The sink answers at once: the commit is durable.
    tracker.confirm(next.through);
    committed++;
    released = 0;
  };
  // What attachOutputs and commitInOrder do for one decided entry.
  const done = (e: Entry) => {
    const outcome = e.outcome as Outcome;
    let payloads: readonly OutRecord[] = [];
    if (outcome.kind === 'dead-letter') {
      payloads = [deadLetterRecord(TOPICS.dlq, e.record, outcome.errorClass, outcome.reason)];
    } else if (outcome.kind === 'indexed' && e.message?.type === 'event') payloads = triggersOf(e.message);
    const before = tracker.pending;
    tracker.complete(e.seq, payloads);
    released += before - tracker.pending;
    if (released >= commitEvery) commit();
  };

  const flush = () => {
    const b = batch;
    batch = [];
    emitted++;
    if (level < 5) return;
    const out = b.slice();
    // The known-copy lookup: the open events of the batch (nobody is known here).
    const keys: EventKey[] = [];
    for (const e of out) if (e.outcome === undefined && e.message?.type === 'event') keys.push(e.message);
    for (const k of keys) NO_OWNERS.get(k.id);
    // The write stage: events created with their origin, profile updates merged per client.
    const events: number[] = [];
    const byClient = new Map<string, number[]>();
    for (let i = 0; i < out.length; i++) {
      const e = out[i]!;
      if (e.outcome !== undefined || e.message === undefined) continue;
      if (e.message.type === 'event') events.push(i);
      else {
        const c = e.message.clientId;
        const list = byClient.get(c);
        if (list) list.push(i);
        else byClient.set(c, [i]);
      }
    }
    const docs = events.map((i) => eventDocumentOf(out[i]!));
    const groups = [...byClient.values()];
    const merged = groups.map((idx) => mergeUpdates(idx.map((i) => out[i]!.message as ProfileUpdate)));
    const created = docs.map(() => CREATED);
    const applied = merged.map(() => APPLIED);
    events.forEach((i, k) => {
      if (created[k]!.status === 'created') out[i] = decide(out[i]!, { kind: 'indexed' });
    });
    groups.forEach((idx, k) => {
      for (const i of idx) {
        const e = out[i]!;
        const stale =
          applied[k]!.status !== 'applied' || !contributes(e.message as ProfileUpdate, merged[k]!);
        out[i] = decide(e, { kind: stale ? 'stale' : 'indexed' });
      }
    });
    // The owners to remember (the no-op store keeps nothing), then outputs and offsets.
    const owners: { event: EventKey; owner: OriginKey }[] = [];
    for (const e of out) {
      if (e.message?.type === 'event' && e.outcome?.kind === 'indexed') {
        owners.push({ event: e.message, owner: originKeyOf(e.record) });
      }
    }
    for (const e of out) done(e);
  };

  for (let r = 0; r < records.length; r++) {
    const record = records[r]!;
    const seq = level === 5 ? tracker.register(record.offset) : r;
    const p = parseRecord(record, s.maxMessageBytes);
    let entry: Entry;
    if (p.ok) entry = { record, seq, message: p.message };
    else if ('tombstone' in p) {
      entry = decide({ record, seq }, { kind: 'dead-letter', errorClass: 'tombstone', reason: 'tombstone' });
    } else
      entry = decide({ record, seq }, { kind: 'dead-letter', errorClass: p.errorClass, reason: p.reason });
    if (level === 1) {
      emitted++;
      continue;
    }
    if (entry.message !== undefined && !seen.admit(entry.message.id)) {
      entry = decide(entry, { kind: 'duplicate', by: 'window' });
    }
    if (level === 2) {
      emitted++;
      continue;
    }
    // Decided entries pass at once; open ones go through their client's FIFO (enrich is synchronous
    // here), unless the enrich is the identity, with which the graph lets them pass at once too.
    const clientId = entry.outcome === undefined && enrich !== identityEnrich ? clientOf(entry) : undefined;
    const ready: Entry[] = [];
    if (clientId === undefined) ready.push(entry);
    else {
      let q = queues.get(clientId);
      if (q === undefined) {
        q = { items: [], head: 0 };
        queues.set(clientId, q);
      }
      q.items.push(entry);
      while (q.head < q.items.length) {
        const e = q.items[q.head++]!;
        const m = e.message!;
        const message = enrich(m) as typeof m;
        ready.push(
          message.id !== m.id || message.clientId !== m.clientId || message.type !== m.type
            ? decide(e, { kind: 'dead-letter', errorClass: 'rejected', reason: 'enrich changed' })
            : message === m
              ? e
              : { ...e, message },
        );
      }
      q.items = [];
      q.head = 0;
    }
    for (const e of ready) {
      if (level === 3) {
        emitted++;
        continue;
      }
      batch.push(e);
      if (batch.length >= s.batchMax) flush();
    }
  }
  if (level >= 4 && batch.length > 0) flush();
  if (level === 5) commit();
  return level === 5 ? committed : emitted;
}

export function buildRecords(count: number, seed = 7): RawRecord[] {
  return planBatch(count, { seed, clients: 1000, duplicateShare: 0.01, poisonShare: 0 }).map((r, i) => ({
    topic: 'bench.graph',
    partition: 0,
    offset: String(i),
    key: r.key === null ? null : Buffer.from(r.key),
    value: r.value,
  }));
}
