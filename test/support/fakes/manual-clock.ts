import type { Clock, TimerHandle } from '../../../src/pushback/clock.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

/** Lets pending promise callbacks run (a macrotask turn drains the microtask queue). */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A clock that moves only when told to: timers fire in time order, each followed by a
 * turn of the event loop so that promise chains they start can run before the next one.
 */
export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t !== handle);
  }

  /** Timers not fired yet. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const until = this.t + ms;
    await settle();
    for (;;) {
      const next = this.nextDue(until);
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.t = Math.max(this.t, next.at);
      next.fn();
      await settle();
    }
    this.t = until;
    await settle();
  }

  private nextDue(until: number): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) {
      if (t.at > until) continue;
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
