export interface HeavyHitter {
  readonly key: string;
  /** Upper bound of the key's true count. */
  readonly count: number;
  /** How much of `count` may belong to keys it evicted: the true count is within [count − error, count]. */
  readonly error: number;
}

/**
 * Space-Saving (Metwally et al.): the heavy hitters of a stream in memory bounded by
 * `capacity`, whatever the number of distinct keys. Every key whose true count exceeds
 * total / capacity is in the summary. A min-heap on the counts makes each add O(log k).
 */
/** One tracked key; `pos` is its place in the heap, so that moving it needs no map update. */
interface Slot {
  key: string;
  count: number;
  error: number;
  pos: number;
}

export class SpaceSaving {
  private readonly heap: Slot[] = [];
  private readonly slots = new Map<string, Slot>();
  private seen = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be >= 1, got ${capacity}`);
  }

  /** Items added since the last clear(). */
  get total(): number {
    return this.seen;
  }

  get size(): number {
    return this.heap.length;
  }

  add(key: string, n = 1): void {
    this.seen += n;
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      slot.count += n;
      this.down(slot.pos);
      return;
    }
    if (this.heap.length < this.capacity) {
      const added: Slot = { key, count: n, error: 0, pos: this.heap.length };
      this.heap.push(added);
      this.slots.set(key, added);
      this.up(added.pos);
      return;
    }
    // Replace the smallest: the newcomer inherits its count as possible error.
    const min = this.heap[0]!;
    this.slots.delete(min.key);
    min.key = key;
    min.error = min.count;
    min.count += n;
    this.slots.set(key, min);
    this.down(0);
  }

  /** The tracked keys, largest count first. */
  top(limit = this.capacity): HeavyHitter[] {
    return this.heap
      .map(({ key, count, error }) => ({ key, count, error }))
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1))
      .slice(0, limit);
  }

  clear(): void {
    this.heap.length = 0;
    this.slots.clear();
    this.seen = 0;
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i]!;
    const b = this.heap[j]!;
    this.heap[i] = b;
    b.pos = i;
    this.heap[j] = a;
    a.pos = j;
  }

  private up(i: number): void {
    const h = this.heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.count <= h[i]!.count) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const h = this.heap;
    const n = h.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < n && h[l]!.count < h[least]!.count) least = l;
      if (r < n && h[r]!.count < h[least]!.count) least = r;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}
