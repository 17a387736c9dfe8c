import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import { RepeatedFailureLog } from '../logging/repeated-failure-log.js';
import { classifyError, classifyItemStatus } from '../model/failures.js';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../model/profile-merge.js';
import { backoffDelay } from '../operators/backoff.js';
import {
  type ElasticsearchStoreObserver,
  itemRetryReason,
  requestRetryReason,
  silentObserver,
} from './elasticsearch-observer.js';
import type { DocumentStore, EventDocument, EventWrite, ProfileWrite } from './ports.js';

export interface ElasticsearchStoreOptions {
  readonly profilesIndex: string;
  readonly eventsIndex: string;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly random?: () => number;
  /** Request durations, retries and 409s (the worker's metrics). */
  readonly observer?: ElasticsearchStoreObserver;
}

/**
 * Elasticsearch behind the DocumentStore port, with our own per-item retry:
 * only the items that failed transiently go round again, with capped
 * exponential backoff and full jitter, until they succeed or the signal aborts.
 * (`client.helpers.bulk` retries only 429s, with a fixed wait, and cannot tell
 * a 409 that means "done" from one that means "try again".)
 *
 * Profiles: read (mget), merge in code, write with `if_seq_no`/`if_primary_term`;
 * a 409 means another writer got there first, so read again and re-merge. This
 * needs no scripting, so it works on any cluster, and two workers racing cannot
 * lose a newer field.
 */
export class ElasticsearchDocumentStore implements DocumentStore {
  private readonly random: () => number;
  private readonly observer: ElasticsearchStoreObserver;
  /** One line per state change and a summary a minute, not one per failed request. */
  private readonly failures: RepeatedFailureLog;

  constructor(
    private readonly client: Client,
    private readonly options: ElasticsearchStoreOptions,
    private readonly log: Logger,
  ) {
    this.random = options.random ?? Math.random;
    this.observer = options.observer ?? silentObserver;
    this.failures = new RepeatedFailureLog(log, { what: 'Elasticsearch requests' });
  }

  async createEvents(events: readonly EventDocument[], signal?: AbortSignal): Promise<EventWrite[]> {
    const results: (EventWrite | undefined)[] = new Array(events.length);
    let pending = events.map((_, i) => i);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await this.pause(attempt, `${pending.length} event(s)`, signal);
      const operations = pending.flatMap((i) => {
        const e = events[i]!;
        return [{ create: { _index: this.options.eventsIndex, _id: e.id } }, e.source];
      });
      const items = await this.bulk(operations, signal);
      if (items === undefined) continue;
      const retry: number[] = [];
      let exists = 0;
      items.forEach((item, k) => {
        const i = pending[k]!;
        const r = item.create;
        if (r === undefined)
          throw new Error(`bulk answered without a create result for event ${events[i]!.id}`);
        if (r.status === 200 || r.status === 201) results[i] = { status: 'created' };
        else if (r.status === 409) {
          results[i] = { status: 'exists' };
          exists++;
        } else if (classifyItemStatus(r.status) === 'transient') {
          retry.push(i);
          this.observer.retries(itemRetryReason(r.status), 1);
        } else results[i] = { status: 'rejected', reason: describeItemError(r.status, r.error) };
      });
      if (exists > 0) this.observer.conflicts('event-exists', exists);
      pending = retry;
    }
    return results as EventWrite[];
  }

  async mergeProfiles(updates: readonly MergedUpdate[], signal?: AbortSignal): Promise<ProfileWrite[]> {
    const results: (ProfileWrite | undefined)[] = new Array(updates.length);
    let pending = updates.map((_, i) => i);
    let conflictsOnly = false;
    for (let attempt = 0; pending.length > 0; attempt++) {
      // A lost race (409) is retried at once with a fresh read; anything else backs off.
      if (attempt > 0 && !conflictsOnly) await this.pause(attempt, `${pending.length} profile(s)`, signal);
      const current = await this.readProfiles(
        pending.map((i) => updates[i]!.clientId),
        signal,
      );
      if (current === undefined) {
        conflictsOnly = false;
        continue;
      }
      const writes: number[] = [];
      const operations: unknown[] = [];
      pending.forEach((i, k) => {
        const stored = current[k]!;
        const { document, changed } = applyUpdate(stored.doc, updates[i]!);
        if (!changed) {
          results[i] = { status: 'stale' };
          return;
        }
        writes.push(i);
        const meta = { _index: this.options.profilesIndex, _id: updates[i]!.clientId };
        operations.push(
          stored.doc === undefined
            ? { create: meta }
            : { index: { ...meta, if_seq_no: stored.seqNo, if_primary_term: stored.primaryTerm } },
          document,
        );
      });
      if (writes.length === 0) break;
      const items = await this.bulk(operations, signal);
      if (items === undefined) {
        pending = writes;
        conflictsOnly = false;
        continue;
      }
      const retry: number[] = [];
      let transient = false;
      let conflicts = 0;
      items.forEach((item, k) => {
        const i = writes[k]!;
        const r = item.index ?? item.create;
        if (r === undefined)
          throw new Error(`bulk answered without a result for profile ${updates[i]!.clientId}`);
        if (r.status === 200 || r.status === 201) results[i] = { status: 'applied' };
        else if (r.status === 409) {
          retry.push(i);
          conflicts++;
        } else if (classifyItemStatus(r.status) === 'transient') {
          retry.push(i);
          transient = true;
          this.observer.retries(itemRetryReason(r.status), 1);
        } else results[i] = { status: 'rejected', reason: describeItemError(r.status, r.error) };
      });
      if (conflicts > 0) {
        this.observer.conflicts('profile-version', conflicts);
        this.observer.retries('conflict', conflicts);
      }
      pending = retry;
      conflictsOnly = !transient;
    }
    return results as ProfileWrite[];
  }

  private async readProfiles(
    ids: string[],
    signal?: AbortSignal,
  ): Promise<{ doc?: ProfileDocument; seqNo?: number; primaryTerm?: number }[] | undefined> {
    const started = performance.now();
    try {
      const res = await this.client.mget<ProfileDocument>(
        { index: this.options.profilesIndex, ids },
        signal ? { signal } : {},
      );
      this.observer.request('mget', (performance.now() - started) / 1000);
      this.failures.success();
      return res.docs.map((d) => {
        if ('error' in d && d.error) throw new Error(`mget of profile ${d._id} failed: ${d.error.reason}`);
        const found = d as {
          found: boolean;
          _source?: ProfileDocument;
          _seq_no?: number;
          _primary_term?: number;
        };
        return found.found && found._source
          ? { doc: found._source, seqNo: found._seq_no!, primaryTerm: found._primary_term! }
          : {};
      });
    } catch (err) {
      if (classifyError(err) === 'transient') {
        this.observer.request('mget', (performance.now() - started) / 1000);
        this.observer.retries(requestRetryReason(err), 1);
        this.failures.failure(err, { op: 'mget' });
        return undefined;
      }
      throw err;
    }
  }

  /** One bulk request. `undefined` means the whole request failed transiently. */
  private async bulk(operations: unknown[], signal?: AbortSignal) {
    const started = performance.now();
    try {
      const res = await this.client.bulk({ operations, refresh: false }, signal ? { signal } : {});
      this.observer.request('bulk', (performance.now() - started) / 1000);
      this.failures.success();
      return res.items;
    } catch (err) {
      if (classifyError(err) === 'transient') {
        this.observer.request('bulk', (performance.now() - started) / 1000);
        this.observer.retries(requestRetryReason(err), 1);
        this.failures.failure(err, { op: 'bulk' });
        return undefined;
      }
      throw err;
    }
  }

  private async pause(attempt: number, what: string, signal?: AbortSignal): Promise<void> {
    const ms = backoffDelay(attempt - 1, {
      baseMs: this.options.retryBaseMs,
      maxMs: this.options.retryMaxMs,
      random: this.random,
    });
    this.log.debug({ attempt, delayMs: Math.round(ms) }, `retrying ${what}`);
    await sleep(ms, undefined, signal ? { signal } : {});
  }
}

function describeItemError(status: number, error: unknown): string {
  const e = error as { type?: string; reason?: string; caused_by?: { reason?: string } } | undefined;
  const cause = e?.caused_by?.reason ? ` (${e.caused_by.reason})` : '';
  return `Elasticsearch ${status} ${e?.type ?? 'error'}: ${e?.reason ?? 'no reason given'}${cause}`;
}
