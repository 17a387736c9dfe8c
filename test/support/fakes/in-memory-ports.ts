import { asyncScheduler, map, type Observable, of, type SchedulerLike, throwError, timer } from 'rxjs';
import type { OriginKey } from '../../../src/model/message.js';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../../../src/model/profile-merge.js';
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
} from '../../../src/sinks/ports.js';

/**
 * In-memory versions of the ports, for marble tests and benchmarks. They answer
 * synchronously (`of(...)`), so that TestScheduler's virtual time covers a whole graph.
 * Each one mirrors what the real sink does against the real server, and each of those
 * behaviours has its integration test (test/integration):
 *
 * - InMemoryKnownCopies ↔ RedisKnownCopies (redis-known-copies.test.ts): owners of known ids
 *   only, the last owner remembered, and "unknown" (never a failure) while Redis is away.
 * - InMemoryDocumentStore ↔ ElasticsearchDocumentStore (elasticsearch-document-store.test.ts):
 *   `create` answers `exists` with the creator's origin (`topic/partition/offset`) and keeps the
 *   first document; two creates of one id in one bulk are `created` then `exists`; profiles
 *   merge by the contract's rule (`stale` when every field is outranked); a document refused
 *   by the mapping is `rejected` while the rest of the bulk is written; deletes answer
 *   `deleted` or `absent`. Documents go through JSON on the way in and out, as `_source`
 *   does, so a field named `__proto__` stays an own field.
 * - InMemoryCommitSink ↔ TransactionalCommitter (kafka-transactional-committer.test.ts): the
 *   offset and the records become durable together, when the commit answers, and a failed
 *   commit makes nothing of it visible.
 */

/** The owner key the real store builds from a stored `origin`; '' for a document without one. */
const ownerOf = (source: {
  origin?: { topic: string; partition: number; offset: number | string };
}): OriginKey =>
  source.origin === undefined
    ? ''
    : `${source.origin.topic}/${source.origin.partition}/${source.origin.offset}`;

/** What `_source` does to a document: JSON in, JSON out. */
const throughJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export class InMemoryKnownCopies implements KnownCopies {
  /** event id → owner origin, as Redis would hold them (one pipeline, one live index). */
  readonly marks = new Map<string, OriginKey>();
  /** False: Redis is away. Every answer is "unknown", and nothing is remembered. */
  available = true;
  readonly calls = { owners: 0, remember: 0 };

  owners(events: readonly EventKey[]): Observable<ReadonlyMap<string, OriginKey>> {
    this.calls.owners++;
    const found = new Map<string, OriginKey>();
    if (!this.available) return of(found);
    for (const { id } of events) {
      const owner = this.marks.get(id);
      if (owner !== undefined) found.set(id, owner);
    }
    return of(found);
  }

  remember(owners: readonly { readonly event: EventKey; readonly owner: OriginKey }[]): Observable<void> {
    this.calls.remember++;
    // SET, not SETNX: the last owner Elasticsearch named is the one kept.
    if (this.available) for (const { event, owner } of owners) this.marks.set(event.id, owner);
    return of(undefined);
  }

  /** FLUSHDB, a restart without persistence, or expired marks. */
  flush(): void {
    this.marks.clear();
  }
}

export interface InMemoryDocumentStoreOptions {
  /** A refusal of the event document itself (a mapping error): its reason, or undefined to accept it. */
  readonly refuseEvent?: (event: EventDocument) => string | undefined;
  /** A refusal of the profile document that would be written: its reason, or undefined to accept it. */
  readonly refuseProfile?: (document: ProfileDocument) => string | undefined;
}

export type StoreCall =
  | { readonly op: 'createEvents'; readonly ids: readonly string[] }
  | { readonly op: 'mergeProfiles'; readonly clients: readonly string[] }
  | { readonly op: 'deleteProfiles'; readonly clients: readonly string[] };

export class InMemoryDocumentStore implements DocumentStore {
  readonly events = new Map<string, EventDocument['source']>();
  readonly profiles = new Map<string, ProfileDocument>();
  /** Every call, in order: what a test counts round trips with. */
  readonly calls: StoreCall[] = [];

  constructor(private readonly options: InMemoryDocumentStoreOptions = {}) {}

  createEvents(events: readonly EventDocument[]): Observable<EventWrite[]> {
    this.calls.push({ op: 'createEvents', ids: events.map((e) => e.id) });
    return of(
      events.map((e): EventWrite => {
        const stored = this.events.get(e.id);
        if (stored !== undefined) return { status: 'exists', owner: ownerOf(stored) };
        const reason = this.options.refuseEvent?.(e);
        if (reason !== undefined) return { status: 'rejected', reason };
        this.events.set(e.id, throughJson(e.source));
        return { status: 'created' };
      }),
    );
  }

  mergeProfiles(updates: readonly MergedUpdate[]): Observable<ProfileWrite[]> {
    this.calls.push({ op: 'mergeProfiles', clients: updates.map((u) => u.clientId) });
    return of(
      updates.map((u): ProfileWrite => {
        const { document, changed } = applyUpdate(this.profiles.get(u.clientId), u);
        if (!changed) return { status: 'stale' };
        const reason = this.options.refuseProfile?.(document);
        if (reason !== undefined) return { status: 'rejected', reason };
        this.profiles.set(u.clientId, throughJson(document));
        return { status: 'applied' };
      }),
    );
  }

  deleteProfiles(clientIds: readonly string[]): Observable<ProfileDelete[]> {
    this.calls.push({ op: 'deleteProfiles', clients: [...clientIds] });
    return of(
      clientIds.map((c): ProfileDelete => ({ status: this.profiles.delete(c) ? 'deleted' : 'absent' })),
    );
  }

  /** The owner key `createEvents` would answer for an id (undefined when there is no such event). */
  ownerOf(id: string): OriginKey | undefined {
    const stored = this.events.get(id);
    return stored === undefined ? undefined : ownerOf(stored);
  }
}

export interface InMemoryCommitSinkOptions {
  /** Answers this long after each call, on `scheduler` (a slow transaction coordinator); default at once. */
  readonly latencyMs?: number;
  readonly scheduler?: SchedulerLike;
}

export interface DurableCommit {
  readonly offset: string;
  readonly records: readonly OutRecord[];
}

export class InMemoryCommitSink implements CommitSink {
  /** The commits that are durable, in order: what Kafka holds. */
  readonly commits: DurableCommit[] = [];
  /** Every call, durable or not (the offsets asked for). */
  readonly requests: string[] = [];
  /** Commits asked for and not answered yet, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;
  private failures: unknown[] = [];

  constructor(private readonly options: InMemoryCommitSinkOptions = {}) {}

  /** The next commit fails with `err` (an aborted transaction): none of it becomes visible. */
  failNext(err: unknown): void {
    this.failures.push(err);
  }

  commit(offset: string, records: readonly OutRecord[]): Observable<true> {
    this.requests.push(offset);
    const failure = this.failures.shift();
    const answer = (): true => {
      if (failure !== undefined) throw failure;
      this.commits.push({ offset, records: [...records] });
      return true;
    };
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight + 1);
    const { latencyMs } = this.options;
    if (latencyMs === undefined) return failure === undefined ? of(answer()) : throwError(() => failure);
    this.inFlight++;
    return timer(latencyMs, this.options.scheduler ?? asyncScheduler).pipe(
      map(() => {
        this.inFlight--;
        return answer();
      }),
    );
  }

  get lastOffset(): string | undefined {
    return this.commits.at(-1)?.offset;
  }

  /** Every record published, in commit order. */
  get records(): OutRecord[] {
    return this.commits.flatMap((c) => c.records);
  }

  /** The published records of one topic. */
  recordsOf(topic: string): OutRecord[] {
    return this.records.filter((r) => r.topic === topic);
  }
}
