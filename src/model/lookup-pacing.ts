/**
 * When a partition asks Redis about its next batch's events. A lookup pays only when it
 * finds copies (events another record created, which then skip Elasticsearch); on a stream
 * of new events it finds none and costs every batch a round trip and the worker CPU per
 * event, a visible share of the drain rate. So after each
 * lookup that found no copy the next one waits (the skipKnownCopies operator uses the retry
 * policy's capped exponential: 50 ms, twice as long each time, up to REDIS_LOOKUP_BACKOFF_MS);
 * one that finds a copy brings back a lookup for every batch. A batch not looked up loses
 * nothing: Elasticsearch's `origin` decides its copies (a 409 and one `mget`), as when Redis
 * is down.
 */
export class LookupPacing {
  /** Lookups in a row that found no copy. */
  private misses = 0;
  private nextAt = Number.NEGATIVE_INFINITY;

  /**
   * `waitAfter(misses)`: how long to wait after the lookup that made `misses + 1` in a row
   * find no copy (from 0). None: every batch is looked up.
   */
  constructor(private readonly waitAfter?: (misses: number) => number) {}

  /** Whether the batch in hand is looked up. */
  due(now: number): boolean {
    return now >= this.nextAt;
  }

  /** A lookup answered at `now`, and whether it found a copy. */
  answered(foundCopies: boolean, now: number): void {
    if (foundCopies || this.waitAfter === undefined) {
      this.misses = 0;
      this.nextAt = Number.NEGATIVE_INFINITY;
      return;
    }
    this.nextAt = now + this.waitAfter(this.misses++);
  }
}

/** The wait after the first lookup that finds nothing: the default BATCH_MS, one batch at low rates. */
export const FIRST_BACKOFF_MS = 50;
