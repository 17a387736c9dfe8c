import type { TopicPriority } from '../../config/control-settings.js';
import type { BreakerState } from '../admission/circuit-breaker.js';

export type ShedReason = 'manual' | 'breaker' | 'lag';

export interface ShedPolicySettings {
  /** The worker's input topics. */
  readonly topics: readonly string[];
  /** Topics not listed are `high`. */
  readonly priorities: ReadonlyMap<string, TopicPriority>;
  /** Total lag of the high-priority topics that starts shedding the low ones; 0: never for lag. */
  readonly lagHigh: number;
  /** … and at or below which it may stop (with the breaker closed). */
  readonly lagLow: number;
  /** Automatic shedding lasts at least this long. */
  readonly minShedMs: number;
}

export interface ShedInputs {
  readonly nowMs: number;
  readonly breaker: BreakerState;
  /** The group's lag per topic (records); a topic without a sample counts as 0. */
  readonly lag: ReadonlyMap<string, number>;
  /** Topics an operator shed by hand (`rxingest shed`), for every worker of the group. */
  readonly manual: ReadonlySet<string>;
}

export interface ShedState {
  /** Automatic shedding of the low-priority topics, when on: why, and since when. */
  readonly auto: { readonly reason: 'breaker' | 'lag'; readonly sinceMs: number } | undefined;
  /** The topics to keep paused, and why. */
  readonly shed: ReadonlyMap<string, ShedReason>;
}

export const NOTHING_SHED: ShedState = { auto: undefined, shed: new Map() };

/**
 * Which topics to shed (keep in Kafka, not consume), so that the worker's capacity goes to
 * the high-priority ones. Pure: the previous state and what is known now in, the next
 * state out.
 *
 * - A topic an operator shed is shed, whatever its priority.
 * - The low-priority topics are shed while the breaker is not closed (after an outage the
 *   high-priority backlog drains first), or once the high-priority topics' total lag
 *   reaches `lagHigh`. They come back when the breaker is closed, that lag is at or below
 *   `lagLow` and `minShedMs` has passed (hysteresis, no flapping).
 * - Without both a high and a low topic there is nothing to give capacity to: no automatic
 *   shedding.
 */
export function nextShedState(prev: ShedState, now: ShedInputs, s: ShedPolicySettings): ShedState {
  const low = s.topics.filter((t) => s.priorities.get(t) === 'low');
  const high = s.topics.filter((t) => s.priorities.get(t) !== 'low');
  const highLag = high.reduce((sum, t) => sum + Math.max(0, now.lag.get(t) ?? 0), 0);
  const unhealthy = now.breaker !== 'closed';
  const lagging = s.lagHigh > 0 && highLag >= s.lagHigh;

  let auto = prev.auto;
  if (low.length === 0 || high.length === 0) auto = undefined;
  else if (auto === undefined) {
    if (unhealthy) auto = { reason: 'breaker', sinceMs: now.nowMs };
    else if (lagging) auto = { reason: 'lag', sinceMs: now.nowMs };
  } else {
    const recovered = !unhealthy && highLag <= s.lagLow && now.nowMs - auto.sinceMs >= s.minShedMs;
    if (recovered) auto = undefined;
    else {
      const reason = unhealthy
        ? 'breaker'
        : auto.reason === 'breaker' && highLag > s.lagLow
          ? 'lag'
          : auto.reason;
      if (reason !== auto.reason) auto = { reason, sinceMs: auto.sinceMs };
    }
  }

  const shed = new Map<string, ShedReason>();
  if (auto) for (const t of low) shed.set(t, auto.reason);
  for (const t of s.topics) if (now.manual.has(t)) shed.set(t, 'manual');
  return { auto, shed };
}

/** What changed between two states: topics to pause and topics to resume. */
export function shedChanges(prev: ShedState, next: ShedState): { shed: string[]; resumed: string[] } {
  return {
    shed: [...next.shed.keys()].filter((t) => !prev.shed.has(t)),
    resumed: [...prev.shed.keys()].filter((t) => !next.shed.has(t)),
  };
}
