import type { Redis } from 'ioredis';
import type { ControlSettings } from '../../config/control-settings.js';
import { controlKeys } from '../../protocol/control-keys.js';
import { type Clock, systemClock, type TimerHandle } from '../clock.js';
import { type ClientRate, nextHotSet } from './hot-set-policy.js';
import { type HeavyHitter, SpaceSaving } from './space-saving.js';

export type HotClientSettings = ControlSettings['hotClients'];

/**
 * One worker's per-client counts: a Space-Saving sketch per topic (bounded memory,
 * whatever the number of clients), drained once per interval.
 */
export class HotClientSampler {
  private readonly sketches = new Map<string, SpaceSaving>();

  constructor(private readonly sketchSize: number) {}

  observe(topic: string, clientId: string): void {
    let s = this.sketches.get(topic);
    if (!s) {
      s = new SpaceSaving(this.sketchSize);
      this.sketches.set(topic, s);
    }
    s.add(clientId);
  }

  /** The interval's heavy hitters per topic; starts a new interval. */
  drain(): Map<string, HeavyHitter[]> {
    const out = new Map<string, HeavyHitter[]>();
    for (const [topic, s] of this.sketches) {
      if (s.size > 0) out.set(topic, s.top());
      s.clear();
    }
    return out;
  }
}

/**
 * The hot sets in Redis: every worker adds its interval's counts (lower and upper bounds)
 * to shared per-interval hashes; a decision reads an interval's totals, applies the
 * hysteresis to the current hot set and writes the new one (clientId → spread) with a TTL
 * of three intervals, so it disappears when no worker decides any more.
 */
export class RedisHotClientStore {
  private readonly keys: ReturnType<typeof controlKeys>;

  constructor(
    private readonly redis: Redis,
    private readonly o: { readonly keyPrefix: string; readonly intervalMs: number; readonly spread: number },
  ) {
    this.keys = controlKeys(o.keyPrefix);
  }

  async report(topic: string, interval: number, hitters: readonly HeavyHitter[]): Promise<void> {
    if (hitters.length === 0) return;
    const lo = this.keys.rates(topic, interval, 'lo');
    const hi = this.keys.rates(topic, interval, 'hi');
    const m = this.redis.multi();
    for (const h of hitters) {
      m.hincrby(lo, h.key, h.count - h.error);
      m.hincrby(hi, h.key, h.count);
    }
    m.pexpire(lo, 3 * this.o.intervalMs).pexpire(hi, 3 * this.o.intervalMs);
    await m.exec();
  }

  async decide(
    topic: string,
    interval: number,
    s: Pick<HotClientSettings, 'enterRatePerSec' | 'leaveRatePerSec'>,
  ): Promise<{ hot: ReadonlySet<string>; entered: string[]; left: string[] }> {
    const [lo, hi, current] = await Promise.all([
      this.redis.hgetall(this.keys.rates(topic, interval, 'lo')),
      this.redis.hgetall(this.keys.rates(topic, interval, 'hi')),
      this.redis.hgetall(this.keys.hot(topic)),
    ]);
    const seconds = this.o.intervalMs / 1000;
    const rates = new Map<string, ClientRate>();
    for (const [id, high] of Object.entries(hi)) {
      rates.set(id, { lowPerSec: Number(lo[id] ?? 0) / seconds, highPerSec: Number(high) / seconds });
    }
    const next = nextHotSet(new Set(Object.keys(current)), rates, s);
    const key = this.keys.hot(topic);
    const m = this.redis.multi().del(key);
    if (next.hot.size > 0) {
      m.hset(key, Object.fromEntries([...next.hot].map((id) => [id, String(this.o.spread)])));
      m.pexpire(key, 3 * this.o.intervalMs);
    }
    await m.exec();
    return next;
  }

  async read(topic: string): Promise<Map<string, number>> {
    const h = await this.redis.hgetall(this.keys.hot(topic));
    return new Map(Object.entries(h).map(([id, spread]) => [id, Number(spread)]));
  }
}

export interface HotClientMonitorDeps {
  readonly sampler: HotClientSampler;
  readonly store: Pick<RedisHotClientStore, 'report' | 'decide'>;
  /** The worker's input topics (a topic with no messages still gets its hot set decided). */
  readonly topics: readonly string[];
  readonly clock?: Clock;
  /** Wall-clock ms (intervals are numbered on it, so that workers agree). Default Date.now. */
  readonly wallNow?: () => number;
  /** A topic's hot set after a decision; entered/left for one log line each, the size for `rxingest_hot_clients`. */
  readonly onHotSet?: (topic: string, hot: ReadonlySet<string>, entered: string[], left: string[]) => void;
  readonly onError?: (stage: 'report' | 'decide', err: unknown) => void;
}

/**
 * Runs the hot-client cycle on interval boundaries of the wall clock: at the end of
 * interval k, report this worker's counts for k; a quarter interval later (so that every
 * worker has reported), decide the hot sets from k's totals. Redis down: the cycle
 * reports the error and goes on; the hot sets then expire and producers stop spreading.
 */
export class HotClientMonitor {
  private readonly clock: Clock;
  private readonly wallNow: () => number;
  private readonly timers = new Set<TimerHandle>();
  private stopped = true;
  private readonly work = new Set<Promise<void>>();

  constructor(
    private readonly s: HotClientSettings,
    private readonly deps: HotClientMonitorDeps,
  ) {
    this.clock = deps.clock ?? systemClock;
    this.wallNow = deps.wallNow ?? Date.now;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.scheduleNext();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.work]);
  }

  private later(ms: number, fn: () => Promise<void>): void {
    const t = this.clock.setTimeout(() => {
      this.timers.delete(t);
      if (this.stopped) return;
      const p = fn().finally(() => this.work.delete(p));
      this.work.add(p);
    }, ms);
    this.timers.add(t);
  }

  private scheduleNext(): void {
    const I = this.s.intervalMs;
    const now = this.wallNow();
    const interval = Math.floor(now / I); // the one running now
    this.later((interval + 1) * I - now, async () => {
      this.scheduleNext();
      await this.report(interval);
      this.later(Math.min(I / 4, 2_000), () => this.decide(interval));
    });
  }

  private async report(interval: number): Promise<void> {
    const counts = this.deps.sampler.drain();
    try {
      await Promise.all(
        [...counts].map(([topic, hitters]) => this.deps.store.report(topic, interval, hitters)),
      );
    } catch (err) {
      this.deps.onError?.('report', err);
    }
  }

  private async decide(interval: number): Promise<void> {
    for (const topic of this.deps.topics) {
      try {
        const { hot, entered, left } = await this.deps.store.decide(topic, interval, this.s);
        this.deps.onHotSet?.(topic, hot, entered, left);
      } catch (err) {
        this.deps.onError?.('decide', err);
        return;
      }
    }
  }
}
