/**
 * Tier 2: from the consumer group's lag over time to a rate limit for each topic's
 * producers. Pure: state and a sample in, state out.
 *
 * - A topic gets a limit when its lag is at or above `lagHigh` and growing (its producers
 *   send faster than the group drains).
 * - The limit is what the group drains per second, less a margin so that the lag shrinks:
 *   `drain × (1 − headroom × f)`, where f goes from 1 at `lagHigh` down to ½ at `lagLow`.
 *   So the limit rises toward the drain rate as the lag falls (but stays below it, or the
 *   lag would settle just above `lagLow`), and is lifted once the lag is at or below
 *   `lagLow` (hysteresis: it is not set again until the lag reaches `lagHigh`). Never below
 *   `minRatePerSec`, so producers are slowed, not stopped.
 */

export interface LagPolicySettings {
  /** 0: never limit. */
  readonly lagHigh: number;
  readonly lagLow: number;
  readonly headroom: number;
  readonly minRatePerSec: number;
}

/** One topic's offsets, summed over its partitions. */
export interface TopicOffsets {
  /** Sum of the partitions' end offsets (high watermarks). */
  readonly end: number;
  /** Sum of the group's committed offsets (the log start where nothing is committed). */
  readonly committed: number;
}

export interface TopicLagState {
  readonly atMs: number;
  readonly end: number;
  readonly committed: number;
  readonly lag: number;
  /** Smoothed records per second: what the group commits, and what producers append. */
  readonly drainPerSec: number | undefined;
  readonly producePerSec: number | undefined;
  /** The published limit for the whole topic (messages per second), if any. */
  readonly limitPerSec: number | undefined;
}

/** Weight of the newest rate in the smoothed rates. */
const RATE_ALPHA = 0.5;

const smooth = (prev: number | undefined, x: number) =>
  prev === undefined ? x : prev + RATE_ALPHA * (x - prev);

export function nextTopicLag(
  prev: TopicLagState | undefined,
  sample: TopicOffsets,
  atMs: number,
  s: LagPolicySettings,
): TopicLagState {
  const lag = Math.max(0, sample.end - sample.committed);
  let drainPerSec = prev?.drainPerSec;
  let producePerSec = prev?.producePerSec;
  if (prev !== undefined && atMs > prev.atMs) {
    const seconds = (atMs - prev.atMs) / 1000;
    drainPerSec = smooth(drainPerSec, Math.max(0, sample.committed - prev.committed) / seconds);
    producePerSec = smooth(producePerSec, Math.max(0, sample.end - prev.end) / seconds);
  }
  let limitPerSec = prev?.limitPerSec;
  const growing = prev !== undefined && lag > prev.lag;
  if (s.lagHigh <= 0 || lag <= s.lagLow) limitPerSec = undefined;
  else if (limitPerSec !== undefined || (lag >= s.lagHigh && growing && drainPerSec !== undefined)) {
    const f = 0.5 + 0.5 * Math.min(1, Math.max(0, (lag - s.lagLow) / (s.lagHigh - s.lagLow)));
    const drain = drainPerSec ?? 0;
    limitPerSec = Math.max(s.minRatePerSec, Math.floor(drain * (1 - s.headroom * f)));
  }
  return { atMs, end: sample.end, committed: sample.committed, lag, drainPerSec, producePerSec, limitPerSec };
}
