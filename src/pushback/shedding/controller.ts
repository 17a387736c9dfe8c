import type { BreakerState } from '../admission/circuit-breaker.js';
import { type Clock, systemClock } from '../clock.js';
import {
  NOTHING_SHED,
  nextShedState,
  type ShedPolicySettings,
  type ShedReason,
  type ShedState,
  shedChanges,
} from './policy.js';

export interface ShedChange {
  /** Topics to pause now, with why. */
  readonly shed: readonly { readonly topic: string; readonly reason: ShedReason }[];
  /** Topics to resume now. */
  readonly resumed: readonly string[];
}

/**
 * Keeps the shed policy's inputs (breaker state, lag, manual decisions) and re-runs the
 * policy whenever one changes, telling the worker only what changed: one call per change,
 * never a repeat.
 */
export class ShedController {
  private current: ShedState = NOTHING_SHED;
  private breaker: BreakerState = 'closed';
  private lag: ReadonlyMap<string, number> = new Map();
  private manual: ReadonlySet<string> = new Set();
  private readonly clock: Pick<Clock, 'now'>;

  constructor(
    private readonly settings: ShedPolicySettings,
    private readonly onChange: (change: ShedChange, state: ShedState) => void,
    clock: Pick<Clock, 'now'> = systemClock,
  ) {
    this.clock = clock;
  }

  get state(): ShedState {
    return this.current;
  }

  setBreaker(state: BreakerState): void {
    this.breaker = state;
    this.evaluate();
  }

  setLag(lag: ReadonlyMap<string, number>): void {
    this.lag = lag;
    this.evaluate();
  }

  setManual(topics: ReadonlySet<string>): void {
    this.manual = topics;
    this.evaluate();
  }

  /** Re-runs the policy (the minimum shed time may have passed). */
  evaluate(): void {
    const next = nextShedState(
      this.current,
      { nowMs: this.clock.now(), breaker: this.breaker, lag: this.lag, manual: this.manual },
      this.settings,
    );
    const { shed, resumed } = shedChanges(this.current, next);
    const relabelled = [...next.shed].filter(
      ([t, r]) => this.current.shed.has(t) && this.current.shed.get(t) !== r,
    );
    this.current = next;
    if (shed.length > 0 || resumed.length > 0 || relabelled.length > 0) {
      this.onChange(
        {
          shed: [...shed, ...relabelled.map(([t]) => t)].map((topic) => ({
            topic,
            reason: next.shed.get(topic)!,
          })),
          resumed,
        },
        next,
      );
    }
  }
}
