import type { Client } from '@elastic/elasticsearch';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../../model/profile-merge.js';
import type { IndexEpochs } from './index-epochs.js';
import type { RecentProfiles } from './recent-profiles.js';
import { type Attempt, attemptRequest, type RequestContext } from './request.js';
import { RequestCoalescer } from './request-coalescer.js';
import { mgetOutcome } from './request-outcome.js';

/** One document of an `mget` answer, as far as a profile read looks at it. */
type ReadDocument = {
  found?: boolean;
  _source?: ProfileDocument;
  _seq_no?: number;
  _primary_term?: number;
  error?: { type?: string; reason?: string } | null;
};

/**
 * Only what a read looks at: each document's `_index`, `_id` and `_version` are left out of
 * the answer the worker parses, per profile read. Every document keeps `found` or `error`, so
 * none drops out of the list and the answers stay in the order of the ids.
 */
const READ_FIELDS = 'docs.found,docs._source,docs._seq_no,docs._primary_term,docs.error';

/** A profile as stored, with what a conditional write of it needs; empty when there is none. */
export type StoredProfile = { doc?: ProfileDocument; seqNo?: number; primaryTerm?: number };

/**
 * What the profiles index holds for the clients of a batch, read with one `mget` or taken
 * from the recent profiles, and what the store tells them after its writes. The reads of
 * every partition go through one RequestCoalescer, as the writes do: batches that arrive
 * while `lanes` reads are out share the next one.
 */
export class StoredProfiles {
  private readonly reads: RequestCoalescer<ReadDocument>;

  constructor(
    private readonly client: Client,
    private readonly profilesIndex: string,
    private readonly recent: { readonly cache: RecentProfiles; readonly epochs: IndexEpochs } | undefined,
    private readonly context: (signal: AbortSignal | undefined) => RequestContext,
    coalesce: { readonly maxItems: number; readonly lanes: number },
  ) {
    this.reads = new RequestCoalescer<ReadDocument>(
      (c, ids) => this.mget(c, ids as string[]),
      coalesce.maxItems,
      coalesce.lanes,
    );
  }

  /**
   * What is stored for each update's client: from the recent profiles when the update
   * changes what the entry holds (a write with its sequence number then settles it),
   * from one `mget` for the rest. An entry that says "nothing new" is not believed: the
   * read decides, so a stale entry can never make an update look stale.
   */
  async current(
    updates: readonly MergedUpdate[],
    signal?: AbortSignal,
  ): Promise<Attempt<{ stored: StoredProfile[]; epoch: string | undefined }>> {
    const epoch = this.recent ? await this.recent.epochs.of(this.profilesIndex) : undefined;
    const stored: (StoredProfile | undefined)[] = new Array(updates.length);
    const unread: number[] = [];
    updates.forEach((u, k) => {
      const hit = epoch === undefined ? undefined : this.recent!.cache.get(epoch, u.clientId);
      if (hit !== undefined && applyUpdate(hit.doc, u).changed) stored[k] = hit;
      else unread.push(k);
    });
    if (unread.length > 0) {
      const read = await this.read(
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

  remember(
    epoch: string | undefined,
    clientId: string,
    doc: ProfileDocument,
    at: { _seq_no?: number; _primary_term?: number },
  ): void {
    if (this.recent === undefined || epoch === undefined) return;
    if (at._seq_no === undefined || at._primary_term === undefined) return;
    this.recent.cache.set(epoch, clientId, { doc, seqNo: at._seq_no, primaryTerm: at._primary_term });
  }

  /** Forgets a client (its write conflicted, failed or deleted the document). */
  forget(clientId: string): void {
    this.recent?.cache.forget(clientId);
  }

  private async read(ids: string[], signal?: AbortSignal): Promise<Attempt<StoredProfile[]>> {
    const res = await this.reads.send(this.context(signal), ids, 1);
    if (!res.done) return res;
    const out: StoredProfile[] = [];
    for (const d of res.value) {
      // A per-document error (an unavailable shard, a missing index) is the destination's.
      if (d.error)
        return {
          done: false,
          why: `mget: ${d.error.type ?? 'error'}: ${d.error.reason ?? ''}`,
          reason: 'mget-doc-error',
        };
      out.push(
        d.found && d._source ? { doc: d._source, seqNo: d._seq_no!, primaryTerm: d._primary_term! } : {},
      );
    }
    return { done: true, value: out };
  }

  /** One `mget` of the profiles index, its documents in the order of `ids`. */
  private async mget(context: RequestContext, ids: string[]): Promise<Attempt<ReadDocument[]>> {
    const { signal } = context;
    const res = await attemptRequest(
      context,
      () =>
        this.client.mget<ProfileDocument>(
          { index: this.profilesIndex, ids, filter_path: READ_FIELDS },
          signal ? { signal } : {},
        ),
      (answer) => mgetOutcome(answer.docs),
    );
    return res.done ? { done: true, value: res.value.docs as ReadDocument[] } : res;
  }
}
