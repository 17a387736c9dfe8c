/**
 * Tier 2: from the consumer group's lag over time to a rate limit for each topic's
 * producers. Pure: state and a sample in, state out.
 *
 * - A topic gets a limit when its lag is at or above `lagHigh` and growing (its producers
 *   send faster than the group drains), once the drain rate has been measured over
 *   `WARM_SAMPLES` intervals (a worker that just started drains little; a limit taken from
 *   that would stop producers nearly dead).
 * - Above `lagLow` the limit is what the group drains per second, less a margin so that
 *   the lag shrinks: `drain × (1 − headroom × f)`, where f goes from 1 at `lagHigh` down to
 *   ½ at `lagLow`: higher lag, lower limit. Never below `minRatePerSec`, so producers are
 *   slowed, not stopped.
 * - At or below `lagLow` the limit is not dropped at once (producers that still want more
 *   than the group drains would send a burst, and the lag would shoot back past `lagHigh`):
 *   it grows by `RAISE` each interval, and is lifted only when it reaches `LIFT_OVER` × the
 *   drain rate with the lag still low, i.e. when producers no longer use it. If they do,
 *   the lag rises past `lagLow` again and the drain-based limit takes over: the lag stays
 *   between the marks instead of cycling past the high one.
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
  /** How many intervals the rates have been measured over. */
  readonly samples: number;
}

/** Intervals of measured drain before a first limit. */
const WARM_SAMPLES = 3;
/** Growth of the limit per interval while the lag is at or below the low mark. */
const RAISE = 1.25;
/** The limit is lifted once it is this many times the drain rate with the lag still low. */
const LIFT_OVER = 2;

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
  const samples = prev === undefined ? 0 : prev.samples + (atMs > prev.atMs ? 1 : 0);
  let limitPerSec = prev?.limitPerSec;
  const growing = prev !== undefined && lag > prev.lag;
  const drain = drainPerSec ?? 0;
  if (s.lagHigh <= 0) limitPerSec = undefined;
  else if (limitPerSec !== undefined && lag <= s.lagLow) {
    limitPerSec = limitPerSec >= LIFT_OVER * drain ? undefined : Math.ceil(limitPerSec * RAISE);
  } else if (
    limitPerSec !== undefined ||
    (lag >= s.lagHigh && growing && drainPerSec !== undefined && samples >= WARM_SAMPLES)
  ) {
    const f = 0.5 + 0.5 * Math.min(1, Math.max(0, (lag - s.lagLow) / (s.lagHigh - s.lagLow)));
    limitPerSec = Math.max(s.minRatePerSec, Math.floor(drain * (1 - s.headroom * f)));
  }
  return {
    atMs,
    end: sample.end,
    committed: sample.committed,
    lag,
    drainPerSec,
    producePerSec,
    limitPerSec,
    samples,
  };
}
