import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { describeError } from '../../model/failures.js';

export interface RedisHealthOptions {
  /** How often to probe (PING) while Redis is down. */
  readonly probeEveryMs: number;
  /** Sees every change: true when Redis answers again, false when it stops (the metric). */
  readonly onChange?: (up: boolean) => void;
}

/**
 * Whether Redis answers: `rxingest_redis_up` and one log line per change of state, never
 * one per batch. Told of every failed call (refused, unreachable, frozen: commands time
 * out); while down, a PING every `probeEveryMs` brings it back. Whether a call is made at
 * all is the Redis circuit breaker's decision (RedisKnownCopies' gate), not this one's:
 * Redis only saves work (Elasticsearch decides), so a call it does not make is "unknown".
 */
export class RedisHealth {
  private up = false;
  private known = false;
  private probe: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisHealthOptions,
    private readonly log: Logger,
  ) {}

  /** Starts watching: connects in the background; start-up never waits for Redis. */
  start(): void {
    this.redis.on('error', () => {
      // ioredis reports every failed reconnect here; the state changes are logged below.
    });
    this.redis.on('end', () => this.down(new Error('connection ended')));
    void this.check();
  }

  /** Redis answered the last probe and no call has failed since. */
  get usable(): boolean {
    return this.up;
  }

  /** A command failed for a reason that is Redis's (not a reply to that command). */
  failed(err: unknown): void {
    this.down(err);
  }

  stop(): void {
    this.stopped = true;
    if (this.probe) clearTimeout(this.probe);
    this.probe = undefined;
  }

  private async check(): Promise<void> {
    this.probe = undefined;
    if (this.stopped) return;
    try {
      if (this.redis.status === 'wait' || this.redis.status === 'end') await this.redis.connect();
      await this.redis.ping();
      this.setUp();
    } catch (err) {
      this.down(err);
    }
  }

  private setUp(): void {
    if (this.up && this.known) return;
    this.up = true;
    this.known = true;
    this.log.info('Redis answers: using it to skip known copies');
    this.options.onChange?.(true);
  }

  private down(err: unknown): void {
    if (this.stopped) return;
    const was = this.up || !this.known;
    this.up = false;
    if (was) {
      this.known = true;
      this.log.warn(
        { err: describeError(err) },
        'Redis unavailable: ingesting without it (Elasticsearch decides every copy) until it answers again',
      );
      this.options.onChange?.(false);
    }
    if (!this.stopped && this.probe === undefined) {
      this.probe = setTimeout(() => void this.check(), this.options.probeEveryMs);
      this.probe.unref();
    }
  }
}
