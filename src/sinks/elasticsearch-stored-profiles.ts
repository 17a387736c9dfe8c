import type { Client } from '@elastic/elasticsearch';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../model/profile-merge.js';
import type { IndexEpochs } from './elasticsearch-index-epochs.js';
import { type Attempt, attemptRequest, type RequestContext } from './elasticsearch-request.js';
import { mgetOutcome } from './elasticsearch-request-outcome.js';
import type { RecentProfiles } from './recent-profiles.js';

/** A profile as stored, with what a conditional write of it needs; empty when there is none. */
export type StoredProfile = { doc?: ProfileDocument; seqNo?: number; primaryTerm?: number };

/**
 * What the profiles index holds for the clients of a batch, read with one `mget` or taken
 * from the recent profiles, and what the store tells them after its writes.
 */
export class StoredProfiles {
  constructor(
    private readonly client: Client,
    private readonly profilesIndex: string,
    private readonly recent: { readonly cache: RecentProfiles; readonly epochs: IndexEpochs } | undefined,
    private readonly context: (signal: AbortSignal | undefined) => RequestContext,
  ) {}

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
    const res = await attemptRequest(
      this.context(signal),
      () => this.client.mget<ProfileDocument>({ index: this.profilesIndex, ids }, signal ? { signal } : {}),
      (answer) => mgetOutcome(answer.docs),
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
}
