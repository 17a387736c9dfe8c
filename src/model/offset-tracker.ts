/**
 * Per-partition bookkeeping for in-order commits. Every record is registered at
 * intake, in offset order; completions arrive in any order; the committable
 * offset only ever moves past a contiguous run of completed records.
 *
 * Offsets are registered rather than assumed contiguous: transaction markers and
 * compaction leave gaps in a partition's offsets. Offsets are strings (kafkajs)
 * compared as bigints, since they may exceed 2^53.
 *
 * Each completion may carry payloads (trigger and dead-letter records) that must
 * be published together with the commit that passes its offset.
 */
export class OffsetTracker<P = never> {
  private readonly order: bigint[] = [];
  private head = 0;
  private readonly done = new Map<bigint, readonly P[]>();
  private last: bigint | undefined;
  private committable: bigint | undefined;

  /** Records registered and not yet passed by the committable offset. */
  get pending(): number {
    return this.order.length - this.head;
  }

  /** The offset to commit (last contiguous completed + 1), if anything completed yet. */
  get commitOffset(): string | undefined {
    return this.committable === undefined ? undefined : (this.committable + 1n).toString();
  }

  register(offset: string): void {
    const o = BigInt(offset);
    if (this.last !== undefined && o <= this.last) {
      throw new Error(`offset ${offset} registered after ${this.last}: offsets must increase`);
    }
    this.last = o;
    this.order.push(o);
  }

  /**
   * Marks a record done. Returns the payloads that became committable (in offset
   * order), or an empty array if the run is still blocked by an earlier record.
   */
  complete(offset: string, payloads: readonly P[] = []): P[] {
    const o = BigInt(offset);
    if (this.done.has(o) || !this.isPending(o)) {
      throw new Error(`offset ${offset} completed twice or never registered`);
    }
    this.done.set(o, payloads);
    const released: P[] = [];
    while (this.head < this.order.length) {
      const next = this.order[this.head]!;
      const p = this.done.get(next);
      if (p === undefined) break;
      this.done.delete(next);
      for (const x of p) released.push(x);
      this.committable = next;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order.splice(0, this.head);
      this.head = 0;
    }
    return released;
  }

  private isPending(o: bigint): boolean {
    if (this.pending === 0) return false;
    if (o < this.order[this.head]! || o > this.last!) return false;
    // Binary search: registered offsets are sorted.
    let lo = this.head;
    let hi = this.order.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.order[mid]!;
      if (v === o) return true;
      if (v < o) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }
}
