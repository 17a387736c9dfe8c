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
export class SpaceSaving {
  private readonly keys: string[] = [];
  private readonly counts: number[] = [];
  private readonly errors: number[] = [];
  private readonly index = new Map<string, number>();
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
    return this.keys.length;
  }

  add(key: string, n = 1): void {
    this.seen += n;
    const at = this.index.get(key);
    if (at !== undefined) {
      this.counts[at]! += n;
      this.down(at);
      return;
    }
    if (this.keys.length < this.capacity) {
      this.keys.push(key);
      this.counts.push(n);
      this.errors.push(0);
      this.index.set(key, this.keys.length - 1);
      this.up(this.keys.length - 1);
      return;
    }
    // Replace the smallest: the newcomer inherits its count as possible error.
    const min = this.counts[0]!;
    this.index.delete(this.keys[0]!);
    this.keys[0] = key;
    this.counts[0] = min + n;
    this.errors[0] = min;
    this.index.set(key, 0);
    this.down(0);
  }

  /** The tracked keys, largest count first. */
  top(limit = this.capacity): HeavyHitter[] {
    return this.keys
      .map((key, i) => ({ key, count: this.counts[i]!, error: this.errors[i]! }))
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1))
      .slice(0, limit);
  }

  clear(): void {
    this.keys.length = 0;
    this.counts.length = 0;
    this.errors.length = 0;
    this.index.clear();
    this.seen = 0;
  }

  private swap(i: number, j: number): void {
    [this.keys[i], this.keys[j]] = [this.keys[j]!, this.keys[i]!];
    [this.counts[i], this.counts[j]] = [this.counts[j]!, this.counts[i]!];
    [this.errors[i], this.errors[j]] = [this.errors[j]!, this.errors[i]!];
    this.index.set(this.keys[i]!, i);
    this.index.set(this.keys[j]!, j);
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.counts[parent]! <= this.counts[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < n && this.counts[l]! < this.counts[least]!) least = l;
      if (r < n && this.counts[r]! < this.counts[least]!) least = r;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}
