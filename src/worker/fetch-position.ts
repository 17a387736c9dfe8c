import { greater } from '../model/offset-tracker.js';

/** What to do with a batch kafkajs delivers. */
export type BatchVerdict =
  | { readonly take: true }
  /** Fetched ahead of where this partition's intake stands: taking it would skip `from`… */
  | { readonly take: false; readonly from: string }
  /** …and it came back so often that the records before it are gone from Kafka (retention, compaction). */
  | { readonly take: true; readonly skippedFrom: string };

const plusOne = (offset: string) => (BigInt(offset) + 1n).toString();

/**
 * Where kafkajs must fetch a partition next, as its intake knows it: the offset it seeked to
 * at start, then one past every batch and gap it took. A batch fetched further ahead was
 * fetched before that seek — kafkajs delivers batches it already had queued after a seek (it
 * drops only those whose seek is still pending), and it resolves empty ones (transaction
 * markers only) by itself — so taking it, or its gap, would pass records that were never
 * ingested, and the next commit would pass them too: their triggers and dead letters lost.
 * Such a batch is refused and the partition sought back to where intake stands.
 *
 * A batch that keeps coming back ahead of the same place after `maxRefusals` seeks is not
 * stale: Kafka no longer has the records before it (retention, compaction), and it is taken.
 * A batch fetched at or before the position is taken (kafkajs fetches again from the
 * committed offset after a rebalance; the runner skips what it already has).
 */
export class FetchPosition {
  private refusedAt: string | undefined;
  private refusals = 0;

  constructor(
    private expected: string | undefined,
    private readonly maxRefusals = 3,
  ) {}

  /** Where intake stands: the next offset it expects kafkajs to fetch. */
  get next(): string | undefined {
    return this.expected;
  }

  /** A batch fetched at `fetchedOffset` (undefined when kafkajs does not say: taken). */
  judgeBatch(fetchedOffset: string | undefined): BatchVerdict {
    return this.judge(fetchedOffset);
  }

  /** An empty batch (markers, aborted records) kafkajs resolved by itself, first raw offset `firstOffset`. */
  judgeGap(firstOffset: string | null | undefined): BatchVerdict {
    return this.judge(firstOffset ?? undefined);
  }

  /** Intake took everything through `lastOffset`. */
  advance(lastOffset: string): void {
    const next = plusOne(lastOffset);
    if (this.expected === undefined || greater(next, this.expected)) this.expected = next;
    this.refusedAt = undefined;
    this.refusals = 0;
  }

  private judge(offset: string | undefined): BatchVerdict {
    const expected = this.expected;
    if (offset === undefined || expected === undefined || !greater(offset, expected)) return { take: true };
    if (this.refusedAt !== expected) {
      this.refusedAt = expected;
      this.refusals = 0;
    }
    if (++this.refusals > this.maxRefusals) return { take: true, skippedFrom: expected };
    return { take: false, from: expected };
  }
}
