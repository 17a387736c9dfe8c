import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  controlKeys,
  DEFAULT_CONTROL_KEY_PREFIX,
  LEAVE_SCRIPT,
  type PublishedLimit,
  READ_CONTROL_SCRIPT,
} from '../protocol/control-keys.js';

/** What a producer needs to know from the workers, per topic. */
export interface ProducerControl {
  /** Makes the source follow a topic (the producer calls it on its first send there). */
  watch(topic: string): void;
  /** This producer's share of the topic's published limit (msg/s), or undefined: no limit. */
  limitFor(topic: string): number | undefined;
  /** The topic's hot clients (clientId → spread). */
  hotClients(topic: string): ReadonlyMap<string, number> | undefined;
}

export interface RedisControlSourceOptions {
  /** Must match the workers' CONTROL_KEY_PREFIX. Default `rxingest:control:`. */
  readonly keyPrefix?: string;
  /** How often it reads (ms). Default 1000. */
  readonly refreshMs?: number;
  /**
   * How long the last values are kept when Redis cannot be read (ms). Default 10 000.
   * After that the producer fails open: no limit, no hot clients, as without push-back.
   */
  readonly staleAfterMs?: number;
  /** Told when reading starts failing (with the error) and when it works again (undefined). */
  readonly onStatus?: (error: Error | undefined) => void;
  /** Identifies this producer among the topic's producers. Default a random id. */
  readonly producerId?: string;
}

interface TopicControl {
  producers: number;
  limit: PublishedLimit | undefined;
  hot: Map<string, number>;
}

const EMPTY: ReadonlyMap<string, number> = new Map();

/**
 * The producer's side of tiers 2 and hot clients: every `refreshMs`, one script call that
 * registers this producer as alive on each topic it sends to and reads the topics' limits,
 * live producer counts and hot sets. A limit is for all of a topic's producers together;
 * each takes an equal share. Never throws into the producer: with Redis down it keeps the
 * last values for `staleAfterMs`, then fails open.
 */
export class RedisControlSource implements ProducerControl {
  private readonly keys: ReturnType<typeof controlKeys>;
  private readonly topics = new Set<string>();
  private readonly state = new Map<string, TopicControl>();
  private readonly refreshMs: number;
  private readonly staleAfterMs: number;
  private readonly producerId: string;
  private timer: NodeJS.Timeout | undefined;
  private lastGoodAt = Date.now();
  private failing = false;
  private inFlight: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly redis: Redis,
    private readonly o: RedisControlSourceOptions = {},
  ) {
    this.keys = controlKeys(o.keyPrefix ?? DEFAULT_CONTROL_KEY_PREFIX);
    this.refreshMs = o.refreshMs ?? 1_000;
    this.staleAfterMs = o.staleAfterMs ?? 10_000;
    this.producerId = o.producerId ?? randomUUID();
  }

  watch(topic: string): void {
    if (this.closed || this.topics.has(topic)) return;
    this.topics.add(topic);
    void this.refresh();
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.refresh(), this.refreshMs);
      this.timer.unref();
    }
  }

  limitFor(topic: string): number | undefined {
    const s = this.state.get(topic);
    if (s?.limit === undefined) return undefined;
    return s.limit.ratePerSec / Math.max(1, s.producers);
  }

  hotClients(topic: string): ReadonlyMap<string, number> | undefined {
    return this.state.get(topic)?.hot ?? EMPTY;
  }

  /** One read now (also what the timer runs). Resolves when done, whatever happened. */
  refresh(): Promise<void> {
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Stops reading and leaves the topics' live-producer sets (so the others' shares grow at once). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
    const topics = [...this.topics];
    if (topics.length === 0) return;
    await this.redis
      .eval(LEAVE_SCRIPT, topics.length, ...topics.map((t) => this.keys.producers(t)), this.producerId)
      .catch(() => undefined);
  }

  private async read(): Promise<void> {
    const topics = [...this.topics];
    if (topics.length === 0 || this.closed) return;
    try {
      const keys = topics.flatMap((t) => [this.keys.producers(t), this.keys.limit(t), this.keys.hot(t)]);
      const res = (await this.redis.eval(
        READ_CONTROL_SCRIPT,
        keys.length,
        ...keys,
        this.producerId,
        String(Math.max(3 * this.refreshMs, 3_000)),
      )) as (number | string | null | string[])[];
      topics.forEach((topic, i) => {
        const producers = Number(res[3 * i]);
        const limitJson = res[3 * i + 1];
        const flat = (res[3 * i + 2] ?? []) as string[];
        const hot = new Map<string, number>();
        for (let k = 0; k + 1 < flat.length; k += 2) {
          const spread = Number(flat[k + 1]);
          if (Number.isInteger(spread) && spread >= 2) hot.set(flat[k]!, spread);
        }
        this.state.set(topic, { producers, limit: parseLimit(limitJson), hot });
      });
      this.lastGoodAt = Date.now();
      if (this.failing) {
        this.failing = false;
        this.o.onStatus?.(undefined);
      }
    } catch (err) {
      if (!this.failing) {
        this.failing = true;
        this.o.onStatus?.(err instanceof Error ? err : new Error(String(err)));
      }
      if (Date.now() - this.lastGoodAt > this.staleAfterMs) this.state.clear();
    }
  }
}

function parseLimit(json: unknown): PublishedLimit | undefined {
  if (typeof json !== 'string') return undefined;
  try {
    const v = JSON.parse(json) as PublishedLimit;
    return typeof v.ratePerSec === 'number' && v.ratePerSec > 0 ? v : undefined;
  } catch {
    return undefined;
  }
}
