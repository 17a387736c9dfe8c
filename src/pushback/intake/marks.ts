/** What one partition holds, as its intake decision counts it. */
export interface PartitionLoad {
  /** Taken in and not yet done: the records' data is in the graph. */
  readonly inGraph: number;
  /** Taken in and not yet durably committed (done records waiting for their transaction too). */
  readonly uncommitted: number;
  /** Key and value bytes taken in and not yet committed. */
  readonly bytes: number;
}

export interface IntakeMarks {
  readonly highWater: number;
  readonly lowWater: number;
  readonly highWaterBytes: number;
}

/**
 * Records taken in and not yet durably committed that pause a partition, in HIGH_WATERs (and
 * LOW_WATERs to resume). Done records wait for their transaction (recordsPerCommit) and
 * hold little; counting them against HIGH_WATER itself paused intake during every commit
 * and cost throughput. The factor trades throughput (fewer pauses while a commit is on its
 * way) against memory held by records waiting for it; a slow commit still pauses intake,
 * only later.
 */
export const UNCOMMITTED_PER_HIGH_WATER = 4;

/**
 * Whether a partition's intake pauses (`true`), resumes (`false`) or stays as it is
 * (`undefined`): it pauses at HIGH_WATER records in its graph, at UNCOMMITTED_PER_HIGH_WATER ×
 * HIGH_WATER not yet committed, or at HIGH_WATER_BYTES, and resumes once all three are back
 * under LOW_WATER, UNCOMMITTED_PER_HIGH_WATER × LOW_WATER and half the bytes.
 */
export function intakePaused(load: PartitionLoad, marks: IntakeMarks): boolean | undefined {
  const k = UNCOMMITTED_PER_HIGH_WATER;
  if (
    load.inGraph >= marks.highWater ||
    load.uncommitted >= k * marks.highWater ||
    load.bytes >= marks.highWaterBytes
  )
    return true;
  if (
    load.inGraph <= marks.lowWater &&
    load.uncommitted <= k * marks.lowWater &&
    load.bytes <= marks.highWaterBytes / 2
  )
    return false;
  return undefined;
}

/** How many times INTAKE_SHARE_PARTITIONS' worth of records a worker holds at most. */
export const MOST_SHARES = 4;

/**
 * How many partitions' worth of work one partition may hold. The per-partition marks are
 * sized for a worker with `sharedBy` partitions: with fewer, each gets the rest of that
 * budget, so a lone partition keeps as many records in flight as `sharedBy` would (what it
 * takes to keep Elasticsearch busy); with more than MOST_SHARES × `sharedBy`, each gets its part
 * of that many partitions' worth, so the records in flight stop growing with the partitions (never
 * below `floor`, the share that still holds a full batch). `sharedBy` 1: always 1.
 */
export function partitionShare(assigned: number, sharedBy: number, floor = 0): number {
  const n = Math.max(1, assigned);
  if (sharedBy <= 1) return 1;
  if (n <= sharedBy) return sharedBy / n;
  const most = MOST_SHARES * sharedBy;
  return n <= most ? 1 : Math.max(floor, most / n);
}

/**
 * The marks of one partition holding `share` partitions' worth of records. The byte window
 * is not shared out: it is what bounds memory when records are large, and a few large
 * records already fill a request, so a deeper queue of them would buy no throughput.
 */
export function sharedMarks(marks: IntakeMarks, share: number): IntakeMarks {
  if (share === 1) return marks;
  return {
    highWater: Math.round(marks.highWater * share),
    lowWater: Math.round(marks.lowWater * share),
    highWaterBytes: marks.highWaterBytes,
  };
}

/**
 * The smallest fetch fetchBytesPerPartition shares a partition's down to: smaller fetches
 * cost more CPU per record (more fetches, smaller pushes into each graph) and took little
 * more off the peak.
 */
export const LEAST_FETCH_BYTES = 128 * 1024;

/**
 * One fetch's size for each of `partitions` partitions, from KAFKA_MAX_BYTES_PER_PARTITION:
 * scaled like the marks past MOST_SHARES × `sharedBy` partitions (never below
 * LEAST_FETCH_BYTES), never raised. A partition takes a whole fetch in before its marks can
 * pause it, so each one's first fetch is in flight whatever its marks: unshared, the fetches
 * of a wide assignment held more records than the marks allow.
 */
export function fetchBytesPerPartition(maxBytes: number, partitions: number, sharedBy: number): number {
  const share = partitionShare(partitions, sharedBy);
  if (share >= 1) return maxBytes;
  return Math.min(maxBytes, Math.max(LEAST_FETCH_BYTES, Math.round(maxBytes * share)));
}

/**
 * Records done since the last commit that start the next one before COMMIT_INTERVAL_MS is up:
 * COMMIT_EVERY, but no more than a partition paused for its uncommitted records must commit
 * to resume (UNCOMMITTED_PER_HIGH_WATER × (HIGH_WATER − LOW_WATER)), so that a paused
 * partition never waits for the timer. Each commit is a Kafka transaction, paid per commit by
 * the broker and the client alike; counted per HIGH_WATER − LOW_WATER, as when done records
 * paused intake at HIGH_WATER itself, a partition draining at 4k records/s committed four
 * times a second instead of twice.
 */
export function recordsPerCommit(s: {
  readonly highWater: number;
  readonly lowWater: number;
  readonly commitEvery: number;
}): number {
  return Math.max(1, Math.min(s.commitEvery, UNCOMMITTED_PER_HIGH_WATER * (s.highWater - s.lowWater)));
}
