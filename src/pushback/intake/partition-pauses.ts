import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import { partitionKey } from '../../model/topic-partition.js';

/** Why a partition's intake is paused; the contract's `rxingest_partition_paused{reason}`. */
export type PauseReason = 'starting' | 'backpressure' | 'breaker' | 'memory' | 'shed' | 'stopping';

export interface PauseObserver {
  paused(topic: string, partition: number, reason: PauseReason, on: boolean): void;
}

/**
 * The one place that pauses and resumes Kafka partitions. Several reasons may hold a
 * partition at once (backpressure while its runner restarts, a breaker while shedding);
 * it is fetched again only when none is left. kafkajs pauses per topic-partition.
 */
export class PartitionPauses {
  /** Per partition held (partitionKey), what holds it. */
  private readonly reasons = new Map<
    string,
    { readonly topic: string; readonly partition: number; readonly held: Set<PauseReason> }
  >();

  constructor(
    private readonly consumer: Pick<Consumer, 'pause' | 'resume'>,
    private readonly observer: PauseObserver,
    private readonly log: Logger,
  ) {}

  set(topic: string, partition: number, reason: PauseReason, on: boolean): void {
    const key = partitionKey(topic, partition);
    let held = this.reasons.get(key)?.held;
    if (held === undefined) {
      if (!on) return;
      held = new Set();
      this.reasons.set(key, { topic, partition, held });
    }
    if (held.has(reason) === on) return;
    const was = held.size > 0;
    if (on) held.add(reason);
    else held.delete(reason);
    this.observer.paused(topic, partition, reason, on);
    const now = held.size > 0;
    if (!now) this.reasons.delete(key);
    if (was === now) return;
    this.apply(topic, partition, now);
    this.log.debug({ topic, partition, reason, paused: now }, now ? 'partition paused' : 'partition resumed');
  }

  /**
   * kafkajs forgets its pauses when it restarts its consumer after a crash (and refuses
   * pause/resume while it is not running): the worker re-applies them on every GROUP_JOIN.
   */
  reapply(): void {
    for (const { topic, partition } of this.reasons.values()) this.apply(topic, partition, true);
  }

  private apply(topic: string, partition: number, paused: boolean): void {
    const tp = [{ topic, partitions: [partition] }];
    try {
      if (paused) this.consumer.pause(tp);
      else this.consumer.resume(tp);
    } catch (err) {
      // Not running (restarting after a crash): the next GROUP_JOIN re-applies what is held.
      this.log.debug({ topic, partition, err: String(err) }, 'could not tell kafkajs about a pause yet');
    }
  }

  isPaused(topic: string, partition: number): boolean {
    return this.reasons.has(partitionKey(topic, partition));
  }

  /** Forgets a partition (revoked): its reasons belong to its next owner. */
  forget(topic: string, partition: number): void {
    const key = partitionKey(topic, partition);
    const held = this.reasons.get(key)?.held;
    if (held === undefined) return;
    for (const r of held) this.observer.paused(topic, partition, r, false);
    this.reasons.delete(key);
    // kafkajs keeps a pause across rebalances: a partition that comes back must not be stuck.
    this.apply(topic, partition, false);
  }
}
