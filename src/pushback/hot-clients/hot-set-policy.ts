/** A client's rate over an interval, as bounds (Space-Saving counts summed over workers). */
export interface ClientRate {
  readonly lowPerSec: number;
  readonly highPerSec: number;
}

export interface HotSetSettings {
  /** 0: no client is ever hot. */
  readonly enterRatePerSec: number;
  readonly leaveRatePerSec: number;
}

/**
 * The next hot set, with hysteresis: a client enters when even the lower bound of its rate
 * reaches `enterRatePerSec` (no false alarms from the sketch's overestimate), and a hot
 * client leaves only when even the upper bound falls below `leaveRatePerSec`. The rate is
 * the client's total over all workers, so spreading it over partitions (and workers) does
 * not make it look cool. Pure.
 */
export function nextHotSet(
  current: ReadonlySet<string>,
  rates: ReadonlyMap<string, ClientRate>,
  s: HotSetSettings,
): { hot: Set<string>; entered: string[]; left: string[] } {
  const hot = new Set<string>();
  if (s.enterRatePerSec > 0) {
    for (const id of current) if ((rates.get(id)?.highPerSec ?? 0) >= s.leaveRatePerSec) hot.add(id);
    for (const [id, r] of rates) if (r.lowPerSec >= s.enterRatePerSec) hot.add(id);
  }
  return {
    hot,
    entered: [...hot].filter((id) => !current.has(id)).sort(),
    left: [...current].filter((id) => !hot.has(id)).sort(),
  };
}
