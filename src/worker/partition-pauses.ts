import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';

/** Why a partition's intake is paused; the contract's `rxingest_partition_paused{reason}`. */
export type PauseReason = 'starting' | 'backpressure' | 'breaker' | 'shed' | 'stopping';

export interface PauseObserver {
  paused(topic: string, partition: number, reason: PauseReason, on: boolean): void;
}

/**
 * The one place that pauses and resumes Kafka partitions. Several reasons may hold a
 * partition at once (backpressure while its runner restarts, a breaker while shedding);
 * it is fetched again only when none is left. kafkajs pauses per topic-partition.
 */
export class PartitionPauses {
  private readonly reasons = new Map<string, Set<PauseReason>>();

  constructor(
    private readonly consumer: Pick<Consumer, 'pause' | 'resume'>,
    private readonly observer: PauseObserver,
    private readonly log: Logger,
  ) {}

  set(topic: string, partition: number, reason: PauseReason, on: boolean): void {
    const key = `${topic}\u0000${partition}`;
    let held = this.reasons.get(key);
    if (held === undefined) {
      if (!on) return;
      held = new Set();
      this.reasons.set(key, held);
    }
    if (held.has(reason) === on) return;
    const was = held.size > 0;
    if (on) held.add(reason);
    else held.delete(reason);
    this.observer.paused(topic, partition, reason, on);
    const now = held.size > 0;
    if (!now) this.reasons.delete(key);
    if (was === now) return;
    const tp = [{ topic, partitions: [partition] }];
    if (now) this.consumer.pause(tp);
    else this.consumer.resume(tp);
    this.log.debug({ topic, partition, reason, paused: now }, now ? 'partition paused' : 'partition resumed');
  }

  isPaused(topic: string, partition: number): boolean {
    return this.reasons.has(`${topic}\u0000${partition}`);
  }

  /** Forgets a partition (revoked): its reasons belong to its next owner. */
  forget(topic: string, partition: number): void {
    const key = `${topic}\u0000${partition}`;
    const held = this.reasons.get(key);
    if (held === undefined) return;
    for (const r of held) this.observer.paused(topic, partition, r, false);
    this.reasons.delete(key);
    // kafkajs keeps a pause across rebalances: a partition that comes back must not be stuck.
    this.consumer.resume([{ topic, partitions: [partition] }]);
  }
}
