/**
 * Per-partition bookkeeping for in-order commits. Every record is registered at intake,
 * in offset order, and gets a sequence number (0, 1, 2, …); completions arrive by sequence
 * number in any order; the committable offset only ever moves past a contiguous run of
 * completed records. Sequence numbers make every step O(1): a completion is an array slot,
 * not a search or a map of bigints.
 *
 * Offsets are registered rather than assumed contiguous: transaction markers, aborted
 * records and compaction leave gaps in a partition's offsets. They are kafkajs's decimal
 * strings (they may exceed 2^53) and are turned into numbers only when a commit is taken.
 *
 * Each completion may carry payloads (trigger and dead-letter records) that must be
 * published with the commit that passes its offset. `take()` hands out what became
 * committable; `confirm()` says it is durable. Until then those records still count as
 * `unfinished`, so a slow commit holds back intake like slow indexing does.
 */
export class OffsetTracker<P = never> {
  /** Offsets of the records from `base` on, by seq − base. */
  private offsets: string[] = [];
  private finished: (readonly P[] | undefined)[] = [];
  private base = 0;
  /** Next seq to hand out. */
  private next = 0;
  /** First seq not yet released: everything below it is done. */
  private head = 0;
  /** Released records' payloads not yet taken. */
  private payloads: P[] = [];
  private taken = 0;
  private confirmed = 0;
  private last: string | undefined;

  /** Registered and not yet committable. */
  get pending(): number {
    return this.next - this.head;
  }

  /** Records registered so far: it changes exactly when the intake takes one in. */
  get registered(): number {
    return this.next;
  }

  /** Registered and not yet durably committed: what backpressure counts. */
  get unfinished(): number {
    return this.next - this.confirmed;
  }

  /** The offset to commit (last contiguous completed + 1), if anything completed yet. */
  get commitOffset(): string | undefined {
    return this.head === 0 ? undefined : plusOne(this.offsetOf(this.head - 1));
  }

  /** Registers the next record; returns its sequence number. */
  register(offset: string): number {
    if (this.last !== undefined && !greater(offset, this.last)) {
      throw new Error(`offset ${offset} registered after ${this.last}: offsets must increase`);
    }
    this.last = offset;
    this.offsets.push(offset);
    this.finished.push(undefined);
    return this.next++;
  }

  /** Marks a record done, with what must be published when its offset is committed. */
  complete(seq: number, payloads: readonly P[] = NONE): void {
    const i = seq - this.base;
    if (!Number.isInteger(seq) || seq < this.head || seq >= this.next || this.finished[i] !== undefined) {
      throw new Error(`record #${seq} completed twice or never registered`);
    }
    this.finished[i] = payloads;
    if (seq !== this.head) return;
    while (this.head < this.next) {
      const k = this.head - this.base;
      const p = this.finished[k];
      if (p === undefined) break;
      for (const x of p) this.payloads.push(x);
      this.finished[k] = NONE;
      this.head++;
    }
    this.compact();
  }

  /**
   * What became committable since the last take: the offset to commit and the payloads
   * to publish with it, `through` being the seq to confirm once it is durable.
   */
  take(): { offset: string; payloads: P[]; through: number } | undefined {
    if (this.head === this.taken) return undefined;
    const payloads = this.payloads;
    this.payloads = [];
    this.taken = this.head;
    return { offset: plusOne(this.offsetOf(this.head - 1)), payloads, through: this.head };
  }

  /** The commit of everything below `through` is durable. */
  confirm(through: number): void {
    if (through > this.taken) throw new Error(`confirm(${through}) past what was taken (${this.taken})`);
    if (through > this.confirmed) this.confirmed = through;
  }

  private offsetOf(seq: number): string {
    const o = this.offsets[seq - this.base];
    if (o === undefined) throw new Error(`offset of record #${seq} is no longer kept`);
    return o;
  }

  /** Drops the slots of released records, keeping the newest released one (commitOffset needs it). */
  private compact(): void {
    const drop = this.head - 1 - this.base;
    if (drop < 1024 || drop * 2 < this.offsets.length) return;
    this.offsets = this.offsets.slice(drop);
    this.finished = this.finished.slice(drop);
    this.base += drop;
  }
}

const NONE: readonly never[] = [];

/** a > b for decimal strings of non-negative integers (no leading zeros). */
export function greater(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

function plusOne(offset: string): string {
  const n = Number(offset);
  return Number.isSafeInteger(n + 1) ? String(n + 1) : (BigInt(offset) + 1n).toString();
}
