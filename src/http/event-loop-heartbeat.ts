export interface HeartbeatOptions {
  /** How often the heartbeat timer is due (default 1 s). */
  readonly intervalMs?: number;
  /** A beat later than this (or none for this long) means the loop is stuck (default 5 s). */
  readonly maxLagMs?: number;
  /** How long a stall seen by a late beat stays reported after the loop turns again (default 5 s). */
  readonly holdMs?: number;
  readonly now?: () => number;
}

export interface LivenessStatus {
  readonly alive: boolean;
  /** How late the latest beat came, in ms. */
  readonly lagMs: number;
  readonly reason?: string;
}

/**
 * Proves that the event loop turns: a timer beats every `intervalMs`, and a
 * beat that comes more than `maxLagMs` late means the loop was blocked. While
 * it is blocked nothing answers at all; right after, the late beat runs first
 * (timers come before I/O in a loop turn), so `/healthz` reports the stall for
 * `holdMs` instead of answering 200 as if nothing had happened.
 */
export class EventLoopHeartbeat {
  private readonly intervalMs: number;
  private readonly maxLagMs: number;
  private readonly holdMs: number;
  private readonly now: () => number;
  private lastBeat: number;
  private lastLagMs = 0;
  private stalledAt: number | undefined;
  private stallMs = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: HeartbeatOptions = {}) {
    this.intervalMs = options.intervalMs ?? 1_000;
    this.maxLagMs = options.maxLagMs ?? 5_000;
    this.holdMs = options.holdMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.lastBeat = this.now();
  }

  start(): this {
    this.lastBeat = this.now();
    this.timer ??= setInterval(() => this.beat(), this.intervalMs).unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The timer's callback (public for tests with a fake clock). */
  beat(): void {
    const now = this.now();
    this.lastLagMs = Math.max(0, now - this.lastBeat - this.intervalMs);
    if (this.lastLagMs > this.maxLagMs) {
      this.stalledAt = now;
      this.stallMs = this.lastLagMs;
    }
    this.lastBeat = now;
  }

  status(): LivenessStatus {
    const now = this.now();
    const silentMs = now - this.lastBeat - this.intervalMs;
    if (silentMs > this.maxLagMs) {
      return {
        alive: false,
        lagMs: silentMs,
        reason: `event loop heartbeat missing for ${seconds(now - this.lastBeat)} s`,
      };
    }
    if (this.stalledAt !== undefined && now - this.stalledAt < this.holdMs) {
      return {
        alive: false,
        lagMs: this.lastLagMs,
        reason: `event loop was blocked for ${seconds(this.stallMs)} s`,
      };
    }
    return { alive: true, lagMs: this.lastLagMs };
  }
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);
