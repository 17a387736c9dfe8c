import type { Client } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import { RepeatedFailureLog } from '../log/repeated-failure-log.js';
import { eventsIndexFor, isDatePattern } from '../model/event-index.js';
import {
  classifyError,
  classifyItemError,
  describeError,
  type ElasticsearchItemError,
} from '../model/failures.js';
import type { OriginKey } from '../model/message.js';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../model/profile-merge.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import type { IndexEpochs } from './elasticsearch-index-epochs.js';
import {
  type ElasticsearchStoreObserver,
  itemRetryReason,
  requestRetryReason,
  silentObserver,
} from './elasticsearch-observer.js';
import type {
  DocumentStore,
  EventDocument,
  EventWrite,
  Origin,
  ProfileDelete,
  ProfileWrite,
} from './ports.js';
import type { RecentProfiles } from './recent-profiles.js';

export interface ElasticsearchStoreOptions {
  readonly profilesIndex: string;
  /** An index name or a date pattern (`events-{yyyy.MM.dd}`), chosen by each event's `ts`. */
  readonly eventsIndex: string;
  readonly retry: RetryPolicy;
  /** Request durations, retries and 409s (the worker's metrics). */
  readonly observer?: ElasticsearchStoreObserver;
  /**
   * Profiles written or read lately, so that their next update skips the `mget`; entries
   * belong to the incarnation of the profiles index that `epochs` names. Absent: every
   * update reads first.
   */
  readonly recentProfiles?: { readonly cache: RecentProfiles; readonly epochs: IndexEpochs };
}

type BulkItem = {
  status: number;
  error?: ElasticsearchItemError;
  result?: string;
  _seq_no?: number;
  _primary_term?: number;
};
type StoredProfile = { doc?: ProfileDocument; seqNo?: number; primaryTerm?: number };
/** A round's verdict on a request: its answer, or why it must be tried again (`reason`: a bounded label). */
type Attempt<T> =
  | { readonly done: true; readonly value: T }
  | { readonly done: false; readonly why: string; readonly reason: string; readonly cause?: unknown };

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
  /** Per kind of write: one line per state change and a summary a minute, never one per retry. */
  private readonly failures = new Map<string, RepeatedFailureLog>();
  private readonly recent: ElasticsearchStoreOptions['recentProfiles'];
  /** Most items per `_bulk` request, learned from size refusals (see `bulk`). */
  private bulkCap = Infinity;
  private bulkCapSuccesses = 0;

  constructor(
    private readonly client: Client,
    private readonly options: ElasticsearchStoreOptions,
    private readonly log: Logger,
  ) {
    this.observer = options.observer ?? silentObserver;
    this.recent = options.recentProfiles;
  }

  async createEvents(events: readonly EventDocument[], signal?: AbortSignal): Promise<EventWrite[]> {
    const results: (EventWrite | undefined)[] = new Array(events.length);
    const indexOf = events.map((e) => eventsIndexFor(this.options.eventsIndex, e.source.ts));
    await this.untilDone(events.length, 'event', signal, async (pending) => {
      const operations: unknown[] = [];
      for (const i of pending) {
        operations.push({ create: { _index: indexOf[i], _id: events[i]!.id } }, events[i]!.source);
      }
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
        if (r.status === 200 || r.status === 201) results[i] = { status: 'created' };
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
      const current = await this.currentProfiles(
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
        for (const i of writes) this.recent?.cache.forget(updates[i]!.clientId);
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
          this.remember(epoch, clientId, written[k]!, r);
          return;
        }
        this.recent?.cache.forget(clientId);
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

  /**
   * What is stored for each update's client: from the recent profiles when the update
   * changes what the entry holds (a write with its sequence number then settles it),
   * from one `mget` for the rest. An entry that says "nothing new" is not believed: the
   * read decides, so a stale entry can never make an update look stale.
   */
  private async currentProfiles(
    updates: readonly MergedUpdate[],
    signal?: AbortSignal,
  ): Promise<Attempt<{ stored: StoredProfile[]; epoch: string | undefined }>> {
    const epoch = this.recent ? await this.recent.epochs.of(this.options.profilesIndex) : undefined;
    const stored: (StoredProfile | undefined)[] = new Array(updates.length);
    const unread: number[] = [];
    updates.forEach((u, k) => {
      const hit = epoch === undefined ? undefined : this.recent!.cache.get(epoch, u.clientId);
      if (hit !== undefined && applyUpdate(hit.doc, u).changed) stored[k] = hit;
      else unread.push(k);
    });
    if (unread.length > 0) {
      const read = await this.readProfiles(
        unread.map((k) => updates[k]!.clientId),
        signal,
      );
      if (!read.done) return read;
      unread.forEach((k, n) => {
        const found = read.value[n]!;
        stored[k] = found;
        if (found.doc !== undefined)
          this.remember(epoch, updates[k]!.clientId, found.doc, {
            _seq_no: found.seqNo,
            _primary_term: found.primaryTerm,
          });
      });
    }
    return { done: true, value: { stored: stored as StoredProfile[], epoch } };
  }

  private remember(
    epoch: string | undefined,
    clientId: string,
    doc: ProfileDocument,
    at: { _seq_no?: number; _primary_term?: number },
  ): void {
    if (this.recent === undefined || epoch === undefined) return;
    if (at._seq_no === undefined || at._primary_term === undefined) return;
    this.recent.cache.set(epoch, clientId, { doc, seqNo: at._seq_no, primaryTerm: at._primary_term });
  }

  async deleteProfiles(clientIds: readonly string[], signal?: AbortSignal): Promise<ProfileDelete[]> {
    const results: (ProfileDelete | undefined)[] = new Array(clientIds.length);
    for (const clientId of clientIds) this.recent?.cache.forget(clientId);
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
    const res = await this.request('mget', () =>
      this.client.mget<{ origin?: Origin }>({ docs, _source_includes: ['origin'] }, signal ? { signal } : {}),
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

  private async readProfiles(ids: string[], signal?: AbortSignal): Promise<Attempt<StoredProfile[]>> {
    const res = await this.request('mget', () =>
      this.client.mget<ProfileDocument>({ index: this.options.profilesIndex, ids }, signal ? { signal } : {}),
    );
    if (!res.done) return res;
    const out: StoredProfile[] = [];
    for (const d of res.value.docs) {
      // A per-document error (an unavailable shard, a missing index) is the destination's.
      if ('error' in d && d.error)
        return {
          done: false,
          why: `mget: ${d.error.type ?? 'error'}: ${d.error.reason ?? ''}`,
          reason: 'mget-doc-error',
        };
      const found = d as {
        found: boolean;
        _source?: ProfileDocument;
        _seq_no?: number;
        _primary_term?: number;
      };
      out.push(
        found.found && found._source
          ? { doc: found._source, seqNo: found._seq_no!, primaryTerm: found._primary_term! }
          : {},
      );
    }
    return { done: true, value: out };
  }

  /**
   * The items (`linesPerItem` lines each) in `_bulk` requests of at most `bulkCap` items.
   * A request refused for its size — whole (429 from the indexing-pressure limit, 413 above
   * `http.max_content_length`) or item by item (every item 429 inside a 200: the primary's
   * share of the same limit) — halves the cap, and its items come back as item-level 429s,
   * retried with backoff in smaller requests. Without this a batch larger than the cluster
   * takes at once would be sent again, and refused, forever. The cap doubles again after
   * a run of requests that went through whole.
   */
  private async bulk(
    operations: unknown[],
    signal?: AbortSignal,
    linesPerItem = 2,
  ): Promise<Attempt<Record<string, BulkItem>[]>> {
    const items = operations.length / linesPerItem;
    const cap = this.bulkCap; // parts may change it: slice by the cap this call started with
    if (items > cap) {
      const answers: Record<string, BulkItem>[] = [];
      for (let k = 0; k < items; k += cap) {
        const part = await this.bulk(
          operations.slice(k * linesPerItem, (k + cap) * linesPerItem),
          signal,
          linesPerItem,
        );
        if (!part.done) return part;
        for (const a of part.value) answers.push(a);
      }
      return { done: true, value: answers };
    }
    const res = await this.request('bulk', () =>
      this.client.bulk({ operations, refresh: false }, signal ? { signal } : {}),
    );
    if (!res.done) {
      const status = (res.cause as { meta?: { statusCode?: number } } | undefined)?.meta?.statusCode;
      if (status !== 429 && status !== 413) return res;
      this.shrinkBulkCap(items);
      const refused: Record<string, BulkItem>[] = [];
      for (let k = 0; k < items; k++)
        refused.push(refusedWhole(operations[k * linesPerItem], status, res.why));
      return { done: true, value: refused };
    }
    const answers = res.value.items as unknown as Record<string, BulkItem>[];
    const rejected = answers.filter((a) => firstResult(a)?.status === 429).length;
    if (rejected === items) this.shrinkBulkCap(items);
    else if (rejected === 0 && items >= this.bulkCap && ++this.bulkCapSuccesses >= BULK_CAP_GROWTH_AFTER) {
      this.bulkCap = this.bulkCap * 2 >= BULK_CAP_UNBOUNDED ? Infinity : this.bulkCap * 2;
      this.bulkCapSuccesses = 0;
    }
    return { done: true, value: answers };
  }

  private shrinkBulkCap(items: number): void {
    this.bulkCapSuccesses = 0;
    if (items <= 1) return;
    const cap = Math.ceil(Math.min(items, this.bulkCap) / 2);
    if (cap < this.bulkCap) {
      this.bulkCap = cap;
      this.log.debug({ itemsPerRequest: cap }, 'Elasticsearch refused a bulk for its size; smaller requests');
    }
  }

  /** One request; a transient failure (connection, timeout, 429/5xx/401/403/404) is a "not yet". */
  private async request<T>(op: 'bulk' | 'mget', send: () => Promise<T>): Promise<Attempt<T>> {
    const started = performance.now();
    try {
      const value = await send();
      this.observer.request(op, (performance.now() - started) / 1000);
      return { done: true, value };
    } catch (err) {
      this.observer.request(op, (performance.now() - started) / 1000);
      if (classifyError(err) === 'transient') {
        return {
          done: false,
          why: `${op}: ${describeError(err)}`,
          reason: requestRetryReason(err),
          cause: err,
        };
      }
      throw err;
    }
  }
}

/** What one round of the per-item retry loop says: which items go round again, and why. */
interface Round {
  readonly retry: number[];
  readonly why: string;
  readonly reason: string;
  /** Lost races only: read again at once, no backoff. */
  readonly immediate?: boolean;
}

/** Requests that go through whole, at the cap, before it doubles. */
const BULK_CAP_GROWTH_AFTER = 8;
/** A cap this high is no cap. */
const BULK_CAP_UNBOUNDED = 100_000;

function firstResult(answer: Record<string, BulkItem>): BulkItem | undefined {
  for (const k in answer) return answer[k];
  return undefined;
}

/** The answer of an item whose request was refused whole: a retriable item-level refusal. */
function refusedWhole(action: unknown, status: number, why: string): Record<string, BulkItem> {
  const [op] = Object.keys(action as object);
  return {
    [op ?? 'index']: {
      status: 429,
      error: { type: 'es_rejected_execution_exception', reason: `refused whole (${status}): ${why}` },
    },
  };
}

function itemReason(r: BulkItem): string {
  return `${r.status} ${r.error?.type ?? 'error'}`;
}

function describeItemError(status: number, error: ElasticsearchItemError | undefined): string {
  const cause = error?.caused_by?.reason ? ` (${error.caused_by.reason})` : '';
  return `Elasticsearch ${status} ${error?.type ?? 'error'}: ${error?.reason ?? 'no reason given'}${cause}`;
}
