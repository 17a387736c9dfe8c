import type { WorkloadRecord } from './workload-options.js';

/** A min-heap of pending duplicates, by (sendAtMs, sequence): equal times keep insertion order. */
export class DuplicateQueue {
  private readonly items: { at: number; seq: number; record: WorkloadRecord }[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  peekAt(): number {
    return this.items[0]?.at ?? Number.POSITIVE_INFINITY;
  }

  push(record: WorkloadRecord): void {
    const items = this.items;
    items.push({ at: record.sendAtMs, seq: this.seq++, record });
    let i = items.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  pop(): WorkloadRecord {
    const items = this.items;
    const top = items[0];
    if (!top) throw new RangeError('pop from an empty queue');
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.less(l, m)) m = l;
        if (r < items.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top.record;
  }

  private less(a: number, b: number): boolean {
    const x = this.items[a]!;
    const y = this.items[b]!;
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }

  private swap(a: number, b: number): void {
    const x = this.items[a]!;
    this.items[a] = this.items[b]!;
    this.items[b] = x;
  }
}
