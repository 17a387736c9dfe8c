/**
 * When a partition asks Redis about its next batch's events. A lookup pays only when it
 * finds copies (events another record created, which then skip Elasticsearch); on a stream
 * of new events it finds none and costs every batch a round trip and the worker about 3 µs
 * of CPU per event (draining 200,000 events, 2026-12-05: 8% of the rate). So after a lookup
 * that found no copy the next ones wait, 50 ms, then twice as long each time, up to
 * REDIS_LOOKUP_BACKOFF_MS; one that finds a copy brings back a lookup for every batch.
 * A batch not looked up loses nothing: Elasticsearch's `origin` decides its copies (a 409
 * and one `mget`), as when Redis is down.
 */
export class LookupPacing {
  private backoffMs = 0;
  private nextAt = Number.NEGATIVE_INFINITY;

  /** `maxMs`: the longest wait between two lookups that find nothing (0: every batch is looked up). */
  constructor(private readonly maxMs: number) {}

  /** Whether the batch in hand is looked up. */
  due(now: number): boolean {
    return now >= this.nextAt;
  }

  /** A lookup answered at `now`, and whether it found a copy. */
  answered(foundCopies: boolean, now: number): void {
    if (foundCopies || this.maxMs === 0) {
      this.backoffMs = 0;
      this.nextAt = Number.NEGATIVE_INFINITY;
      return;
    }
    this.backoffMs = Math.min(this.maxMs, this.backoffMs === 0 ? FIRST_BACKOFF_MS : 2 * this.backoffMs);
    this.nextAt = now + this.backoffMs;
  }
}

/** The wait after the first lookup that finds nothing: the default BATCH_MS, one batch at low rates. */
export const FIRST_BACKOFF_MS = 50;
