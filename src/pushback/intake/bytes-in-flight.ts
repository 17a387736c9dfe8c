import { greater } from '../../model/offset-tracker.js';

/**
 * The bytes (keys and values) a partition has taken in and not yet committed. HIGH_WATER
 * counts records, which bounds memory only while records are small: 2,000 records of 1 MiB
 * each are 2 GB. Counted per fetched batch, not per record: a batch leaves the count once
 * the committed offset passes its last offset, which keeps this O(1) per record and errs on
 * the side of counting a partly committed batch whole.
 */
export class BytesInFlight {
  /** Per batch taken in: its last offset and the total taken in up to and including it. */
  private readonly batches: { last: string; upTo: number }[] = [];
  private head = 0;
  private takenIn = 0;
  private committedUpTo = 0;

  /** Bytes taken in and not yet committed. */
  get bytes(): number {
    return this.takenIn - this.committedUpTo;
  }

  /** A batch whose last offset is `lastOffset` came in with `bytes` bytes. */
  add(lastOffset: string, bytes: number): void {
    if (bytes <= 0) return;
    this.takenIn += bytes;
    this.batches.push({ last: lastOffset, upTo: this.takenIn });
  }

  /** The committed offset is now `offset` (the next to read): batches below it are done. */
  committed(offset: string): void {
    while (this.head < this.batches.length && greater(offset, this.batches[this.head]!.last)) {
      this.committedUpTo = this.batches[this.head]!.upTo;
      this.head++;
    }
    if (this.head > 64 && this.head * 2 > this.batches.length) {
      this.batches.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** What a record brings into memory, as far as the window counts it. */
export const recordBytes = (key: Buffer | null, value: Buffer | null): number =>
  (key?.length ?? 0) + (value?.length ?? 0);
