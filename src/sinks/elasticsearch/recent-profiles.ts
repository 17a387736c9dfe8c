import type { ProfileDocument } from '../../model/profile-merge.js';

/** A profile as this worker last wrote or read it, with what its next conditional write needs. */
export interface RecentProfile {
  readonly doc: ProfileDocument;
  readonly seqNo: number;
  readonly primaryTerm: number;
}

export interface RecentProfilesStats {
  readonly hits: number;
  readonly misses: number;
  readonly size: number;
}

/**
 * The profiles this worker wrote or read recently, so that the next update of a client
 * seen lately needs no `mget` before its conditional write. Least recently used entries
 * go first once `maxEntries` is reached (memory is bounded whatever the number of clients).
 *
 * Nothing here is trusted as truth: an entry only supplies the `if_seq_no`/`if_primary_term`
 * of a write, so a stale one (another worker wrote since, the document was deleted) costs a
 * 409 and a fresh read. Entries belong to one incarnation of the profiles index (its uuid):
 * after the index is deleted and created again, sequence numbers start over and an old
 * entry could otherwise match a different document.
 */
export class RecentProfiles {
  private readonly entries = new Map<string, RecentProfile>();
  private epoch: string | undefined;
  private hitCount = 0;
  private missCount = 0;

  constructor(private readonly maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be an integer >= 1, got ${maxEntries}`);
    }
  }

  /** The entry of a client in the index incarnation `epoch`, or undefined (counted as a miss). */
  get(epoch: string, clientId: string): RecentProfile | undefined {
    this.enter(epoch);
    const hit = this.entries.get(clientId);
    if (hit === undefined) {
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    // Map keeps insertion order: re-inserting makes it the most recently used.
    this.entries.delete(clientId);
    this.entries.set(clientId, hit);
    return hit;
  }

  set(epoch: string, clientId: string, entry: RecentProfile): void {
    this.enter(epoch);
    this.entries.delete(clientId);
    this.entries.set(clientId, entry);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /** Forgets a client (its write conflicted, failed or deleted the document). */
  forget(clientId: string): void {
    this.entries.delete(clientId);
  }

  stats(): RecentProfilesStats {
    return { hits: this.hitCount, misses: this.missCount, size: this.entries.size };
  }

  private enter(epoch: string): void {
    if (epoch !== this.epoch) {
      this.entries.clear();
      this.epoch = epoch;
    }
  }
}
