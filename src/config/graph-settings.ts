import type { TombstonePolicy } from '../model/message.js';

/** What one partition's graph needs to know. */
export interface GraphSettings {
  readonly maxMessageBytes: number;
  readonly dedupWindowMs: number;
  readonly clientIdleMs: number;
  readonly batchMax: number;
  readonly batchMs: number;
  /** A partition's batches written to Elasticsearch at once (one with a tombstone alone). */
  readonly batchesInFlight: number;
  /**
   * Batches that wait while those writes are busy are joined, up to BATCH_MAX entries and
   * this many bytes of records (0, the default: never joined; joining trades fewer requests
   * for batches held back, and did not come out ahead).
   */
  readonly batchJoinBytes: number;
  /**
   * After Redis lookups that found no copy, the longest wait before a partition looks up
   * again (its batches meanwhile go to Elasticsearch unasked); 0: every batch is looked up.
   */
  readonly redisLookupBackoffMs: number;
  readonly highWater: number;
  readonly lowWater: number;
  /** Bytes taken in and not committed that pause a partition too (it resumes below half). */
  readonly highWaterBytes: number;
  /** Below this many partitions assigned, the per-partition marks and batches in flight scale up (see partitionShare). */
  readonly intakeSharePartitions: number;
  readonly commitIntervalMs: number;
  readonly commitEvery: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** What a record with a null value (a tombstone) does (contract, "Input"). */
  readonly tombstones: TombstonePolicy;
}
