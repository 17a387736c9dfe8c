import type { Redis } from 'ioredis';
import {
  controlKeys,
  LIFT_LIMIT_SCRIPT,
  type PublishedLimit,
  SET_LIMIT_SCRIPT,
} from '../../protocol/control-keys.js';

export interface ProducerLimitPublisherOptions {
  readonly keyPrefix: string;
  /** The consumer group whose lag asks for the limit. */
  readonly group: string;
  /** A limit not refreshed within this expires (a dead worker lifts its limits). */
  readonly ttlMs: number;
}

/**
 * The worker's side of tier 2: publishes (and refreshes) or lifts a topic's producer rate
 * limit in Redis. Errors are thrown to the caller (the lag monitor reports them and goes
 * on): with Redis down, producers simply see no limit.
 */
export class ProducerLimitPublisher {
  private readonly keys: ReturnType<typeof controlKeys>;

  constructor(
    private readonly redis: Redis,
    private readonly o: ProducerLimitPublisherOptions,
  ) {
    this.keys = controlKeys(o.keyPrefix);
  }

  /** Returns false when another group holds a lower limit for the topic (that one stays). */
  async publish(topic: string, ratePerSec: number, lag: number, at = new Date()): Promise<boolean> {
    const value: PublishedLimit = { ratePerSec, group: this.o.group, lag, at: at.toISOString() };
    const set = await this.redis.eval(
      SET_LIMIT_SCRIPT,
      1,
      this.keys.limit(topic),
      this.o.group,
      String(ratePerSec),
      String(this.o.ttlMs),
      JSON.stringify(value),
    );
    return set === 1;
  }

  async lift(topic: string): Promise<void> {
    await this.redis.eval(LIFT_LIMIT_SCRIPT, 1, this.keys.limit(topic), this.o.group);
  }
}
