import type { Client } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import { RepeatedFailureLog } from '../../log/repeated-failure-log.js';
import { eventsIndexFor, isDatePattern } from '../../model/event-index.js';
import { classifyItemError } from '../../model/failures.js';
import type { OriginKey } from '../../model/message.js';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../../model/profile-merge.js';
import type { RequestGate } from '../../pushback/admission/gates.js';
import type { RetryPolicy } from '../../retry/retry-policy.js';
import type {
  DocumentStore,
  EventDocument,
  EventWrite,
  Origin,
  ProfileDelete,
  ProfileWrite,
} from '../ports.js';
import {
  type BulkAnswer,
  BulkRequests,
  createActions,
  describeItemError,
  itemReason,
  SourceOf,
} from './bulk.js';
import type { IndexEpochs } from './index-epochs.js';
import { type ElasticsearchStoreObserver, itemRetryReason, silentObserver } from './observer.js';
import type { RecentProfiles } from './recent-profiles.js';
import { type Attempt, attemptRequest, type RequestContext, ungated } from './request.js';
import { RequestCoalescer } from './request-coalescer.js';
import { mgetOutcome } from './request-outcome.js';
import { StoredProfiles } from './stored-profiles.js';

export interface ElasticsearchStoreOptions {
  readonly profilesIndex: string;
  /** An index name or a date pattern (`events-{yyyy.MM.dd}`), chosen by each event's `ts`. */
  readonly eventsIndex: string;
  readonly retry: RetryPolicy;
  /** Request durations, retries and 409s (the worker's metrics). */
  readonly observer?: ElasticsearchStoreObserver;
  /**
   * Admission of every bulk and mget, retries included (the worker's adaptive concurrency
   * limit and circuit breaker). None: every request goes at once.
   */
  readonly gate?: RequestGate;
  /**
   * Profiles written or read lately, so that their next update skips the `mget`; entries
   * belong to the incarnation of the profiles index that `epochs` names. Absent: every
   * update reads first.
   */
  readonly recentProfiles?: { readonly cache: RecentProfiles; readonly epochs: IndexEpochs };
}

/**
 * Items one merged bulk request (or profiles' mget) carries at most: large enough that a
 * node spends its time indexing rather than parsing requests, small enough that one refusal
 * or retry costs little; the bulk-size cap still splits what a cluster refuses as too large.
 */
const COALESCE_MAX_ITEMS = 4_000;
/**
 * Merged bulk requests out at once: with one, the node idles while the callers of the
 * request just answered finish their batch (owner marks, commit) and bring the next; a
 * third adds contention without keeping the node any busier (docs/benchmarks.md).
 */
const COALESCE_LANES = 2;
/**
 * Profile reads (mget) out at once before the next batches' reads wait to share one. A read
 * stands before its batch's writes, so it should seldom wait: fewer lanes merge more reads
 * but hold a batch's writes behind another batch's read (docs/benchmarks.md).
 */
const READ_LANES = 4;

/**
 * Elasticsearch behind the DocumentStore port, with our own per-item retry: only the items
 * that failed go round again, with the one retry policy, until they succeed or the signal
 * aborts. (`client.helpers.bulk` retries only 429s, with a fixed wait, and cannot tell a 409
 * that means "exists" from one that means "try again".) Which failures are the document's
 * and which the destination's is decided by `classifyItemError`: only the document's end
 * as `rejected`; everything else — a missing index with auto-create off, a lost privilege,
 * a blocked index, an unavailable shard, 429, 5xx, a dropped connection — waits and retries.
 *
 * Events: `create` with `origin`; on a 409 one `mget` of the conflicting ids reads who
 * created them, which tells a replay (own origin) from a re-sent copy.
 *
 * Profiles: read (mget), merge in code, write with `if_seq_no`/`if_primary_term`; a 409
 * means another writer got there first, so read again and re-merge. This needs no
 * scripting, so it works on any cluster, and two workers racing cannot lose a newer field.
 */
export class ElasticsearchDocumentStore implements DocumentStore {
  private readonly observer: ElasticsearchStoreObserver;
  private readonly gate: RequestGate;
  /** Per kind of write: one line per state change and a summary a minute, never one per retry. */
  private readonly failures = new Map<string, RepeatedFailureLog>();
  private readonly profiles: StoredProfiles;
  private readonly bulks: RequestCoalescer<BulkAnswer>;

  constructor(
    private readonly client: Client,
    private readonly options: ElasticsearchStoreOptions,
    private readonly log: Logger,
  ) {
    this.observer = options.observer ?? silentObserver;
    this.gate = options.gate ?? ungated;
    this.profiles = new StoredProfiles(
      client,
      options.profilesIndex,
      options.recentProfiles,
      (signal) => this.context('mget', signal),
      { maxItems: COALESCE_MAX_ITEMS, lanes: READ_LANES },
    );
    const bulks = new BulkRequests(client, log, options.recentProfiles !== undefined);
    this.bulks = new RequestCoalescer<BulkAnswer>(
      (c, ops, lines) => bulks.send(c, ops, lines),
      COALESCE_MAX_ITEMS,
      COALESCE_LANES,
    );
  }

  async createEvents(events: readonly EventDocument[], signal?: AbortSignal): Promise<EventWrite[]> {
    const results: (EventWrite | undefined)[] = new Array(events.length);
    const pattern = this.options.eventsIndex;
    const indexOf = isDatePattern(pattern)
      ? events.map((e) => eventsIndexFor(pattern, e.source.ts))
      : events.map(() => pattern);
    const actions = createActions(events, indexOf);
    await this.untilDone(events.length, 'event', signal, async (pending) => {
      const operations: unknown[] = [];
      for (const i of pending) operations.push(actions[i], new SourceOf(events[i]!));
      const bulk = await this.bulk(operations, signal);
      if (!bulk.done) return { retry: pending, why: bulk.why, reason: bulk.reason };
      const retry: number[] = [];
      const conflicts: number[] = [];
      const missing = new Set<string>();
      let why = '';
      let reason = '';
      bulk.value.forEach((item, k) => {
        const i = pending[k]!;
        const r = item.create;
        if (r === undefined)
          throw new Error(`bulk answered without a create result for event ${events[i]!.id}`);
        if (r.status === 200 || r.status === 201) results[i] = CREATED;
        else if (r.status === 409) conflicts.push(i);
        else if (classifyItemError(r.status, r.error) === 'transient') {
          retry.push(i);
          why ||= itemReason(r);
          reason ||= itemRetryReason(r.status);
          if (r.error?.type === 'index_not_found_exception') missing.add(indexOf[i]!);
        } else results[i] = { status: 'rejected', reason: describeItemError(r.status, r.error) };
      });
      // A day's index under a date pattern is ours to create (from the template) when the
      // cluster does not create indices by itself; a fixed index is the operator's.
      if (missing.size > 0 && isDatePattern(this.options.eventsIndex))
        await this.createIndices(missing, signal);
      if (conflicts.length > 0) {
        this.observer.conflicts('event-exists', conflicts.length);
        const owners = await this.ownersOf(
          conflicts.map((i) => ({ _index: indexOf[i]!, _id: events[i]!.id })),
          signal,
        );
        if (!owners.done) {
          retry.push(...conflicts);
          why ||= owners.why;
          reason ||= owners.reason;
        } else {
          conflicts.forEach((i, k) => {
            const owner = owners.value[k];
            // Gone between the create and the read (deleted): create it again.
            if (owner === undefined) retry.push(i);
            else results[i] = { status: 'exists', owner };
          });
        }
      }
      return { retry, why, reason };
    });
    return results as EventWrite[];
  }

  async mergeProfiles(updates: readonly MergedUpdate[], signal?: AbortSignal): Promise<ProfileWrite[]> {
    const results: (ProfileWrite | undefined)[] = new Array(updates.length);
    await this.untilDone(updates.length, 'profile', signal, async (pending) => {
      const current = await this.profiles.current(
        pending.map((i) => updates[i]!),
        signal,
      );
      if (!current.done) return { retry: pending, why: current.why, reason: current.reason };
      const { stored, epoch } = current.value;
      const writes: number[] = [];
      const written: ProfileDocument[] = [];
      const operations: unknown[] = [];
      pending.forEach((i, k) => {
        const was = stored[k]!;
        const { document, changed } = applyUpdate(was.doc, updates[i]!);
        if (!changed) {
          results[i] = { status: 'stale' };
          return;
        }
        writes.push(i);
        written.push(document);
        const meta = { _index: this.options.profilesIndex, _id: updates[i]!.clientId };
        operations.push(
          was.doc === undefined
            ? { create: meta }
            : { index: { ...meta, if_seq_no: was.seqNo, if_primary_term: was.primaryTerm } },
          document,
        );
      });
      if (writes.length === 0) return { retry: [], why: '', reason: '' };
      const bulk = await this.bulk(operations, signal);
      if (!bulk.done) {
        for (const i of writes) this.profiles.forget(updates[i]!.clientId);
        return { retry: writes, why: bulk.why, reason: bulk.reason };
      }
      const retry: number[] = [];
      let conflicts = 0;
      let why = '';
      let reason = '';
      bulk.value.forEach((item, k) => {
        const i = writes[k]!;
        const clientId = updates[i]!.clientId;
        const r = item.index ?? item.create;
        if (r === undefined) throw new Error(`bulk answered without a result for profile ${clientId}`);
        if (r.status === 200 || r.status === 201) {
          results[i] = { status: 'applied' };
          this.profiles.remember(epoch, clientId, written[k]!, r);
          return;
        }
        this.profiles.forget(clientId);
        if (r.status === 409) {
          conflicts++;
          retry.push(i);
        } else if (classifyItemError(r.status, r.error) === 'transient') {
          retry.push(i);
          why ||= itemReason(r);
          reason ||= itemRetryReason(r.status);
        } else results[i] = { status: 'rejected', reason: describeItemError(r.status, r.error) };
      });
      if (conflicts > 0) this.observer.conflicts('profile-version', conflicts);
      // A lost race (409 only) is retried at once with a fresh read; anything else backs off.
      return { retry, why, reason: reason || 'conflict', immediate: why === '' };
    });
    return results as ProfileWrite[];
  }

  async deleteProfiles(clientIds: readonly string[], signal?: AbortSignal): Promise<ProfileDelete[]> {
    const results: (ProfileDelete | undefined)[] = new Array(clientIds.length);
    for (const clientId of clientIds) this.profiles.forget(clientId);
    await this.untilDone(clientIds.length, 'profile delete', signal, async (pending) => {
      const operations = pending.map((i) => ({
        delete: { _index: this.options.profilesIndex, _id: clientIds[i]! },
      }));
      const bulk = await this.bulk(operations, signal, 1);
      if (!bulk.done) return { retry: pending, why: bulk.why, reason: bulk.reason };
      const retry: number[] = [];
      let why = '';
      let reason = '';
      bulk.value.forEach((item, k) => {
        const i = pending[k]!;
        const r = item.delete;
        if (r === undefined)
          throw new Error(`bulk answered without a delete result for profile ${clientIds[i]}`);
        if (r.status === 200) results[i] = { status: 'deleted' };
        // A missing document answers 404 with result "not_found" and no error; a missing index has an error.
        else if (r.status === 404 && r.error === undefined) results[i] = { status: 'absent' };
        else {
          retry.push(i);
          why ||= itemReason(r);
          reason ||= itemRetryReason(r.status);
        }
      });
      return { retry, why, reason };
    });
    return results as ProfileDelete[];
  }

  /**
   * The per-item retry loop: `round` handles the pending items and says which to try
   * again; between rounds the retry policy waits (at once for lost races only).
   */
  private async untilDone(
    count: number,
    what: string,
    signal: AbortSignal | undefined,
    round: (pending: number[]) => Promise<Round>,
  ): Promise<void> {
    let pending = Array.from({ length: count }, (_, i) => i);
    const failures = this.failureLog(what);
    let retried = false;
    for (let attempt = 0; pending.length > 0; ) {
      const { retry, why, reason, immediate } = await round(pending);
      pending = retry;
      if (pending.length === 0) break;
      if (immediate) {
        this.observer.retries('conflict', pending.length);
        continue;
      }
      this.observer.retries(reason, pending.length);
      retried = true;
      failures.failure(new Error(why), { items: pending.length }, reason);
      await this.options.retry.wait(attempt++, signal);
    }
    // Recovered only when a batch goes through without a retry: under a lasting storm every
    // batch needs some, and the state stays "failing" (summarised), not a line per batch.
    if (!retried) failures.success();
  }

  private context(op: 'bulk' | 'mget', signal: AbortSignal | undefined): RequestContext {
    return { op, gate: this.gate, observer: this.observer, signal };
  }

  private failureLog(what: string): RepeatedFailureLog {
    let f = this.failures.get(what);
    if (f === undefined) {
      f = new RepeatedFailureLog(this.log, { what: `Elasticsearch: ${what} writes` });
      this.failures.set(what, f);
    }
    return f;
  }

  private async createIndices(indices: Set<string>, signal?: AbortSignal): Promise<void> {
    for (const index of indices) {
      try {
        await this.client.indices.create({ index }, signal ? { signal } : {});
        this.log.info({ index }, 'created a day index of EVENTS_INDEX (auto-create is off)');
      } catch {
        // Created meanwhile by another worker, or not allowed: the retry finds out.
      }
    }
  }

  private async ownersOf(
    docs: { _index: string; _id: string }[],
    signal?: AbortSignal,
  ): Promise<Attempt<(OriginKey | undefined)[]>> {
    const res = await attemptRequest(
      this.context('mget', signal),
      () =>
        this.client.mget<{ origin?: Origin }>(
          { docs, _source_includes: ['origin'] },
          signal ? { signal } : {},
        ),
      (answer) => mgetOutcome(answer.docs),
    );
    if (!res.done) return res;
    const owners: (OriginKey | undefined)[] = [];
    for (const d of res.value.docs) {
      if ('error' in d && d.error)
        return {
          done: false,
          why: `mget: ${d.error.type ?? 'error'}: ${d.error.reason ?? ''}`,
          reason: 'mget-doc-error',
        };
      const found = d as { found: boolean; _source?: { origin?: Origin } };
      if (!found.found) owners.push(undefined);
      else {
        const o = found._source?.origin;
        // A document written before origins existed belongs to nobody we can name.
        owners.push(o === undefined ? '' : `${o.topic}/${o.partition}/${o.offset}`);
      }
    }
    return { done: true, value: owners };
  }

  private bulk(
    operations: unknown[],
    signal?: AbortSignal,
    linesPerItem = 2,
  ): Promise<Attempt<BulkAnswer[]>> {
    return this.bulks.send(this.context('bulk', signal), operations, linesPerItem);
  }
}

const CREATED: EventWrite = { status: 'created' };

/** What one round of the per-item retry loop says: which items go round again, and why. */
interface Round {
  readonly retry: number[];
  readonly why: string;
  readonly reason: string;
  /** Lost races only: read again at once, no backoff. */
  readonly immediate?: boolean;
}
