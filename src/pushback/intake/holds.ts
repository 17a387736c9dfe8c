import type { Assignment } from '../../model/topic-partition.js';
import type { PartitionPauses } from './partition-pauses.js';

/**
 * The worker-wide holds on intake that push-back decides: every partition while the
 * Elasticsearch breaker is open (reason `breaker`) or the live heap is near its limit
 * (reason `memory`), a shed topic's partitions (reason `shed`). They apply to whatever this worker is assigned now, and to what it is assigned
 * later (`applyToAssignment`, on every GROUP_JOIN once the registry has recorded the new
 * assignment and let go of revoked partitions); PartitionPauses keeps them apart from the
 * per-partition reasons (`starting`, `backpressure`), so a partition is fetched again only
 * when nothing holds it.
 */
export class PushbackHolds {
  private breakerOpen = false;
  private memoryHigh = false;
  private readonly shed = new Set<string>();

  constructor(
    private readonly pauses: Pick<PartitionPauses, 'set'>,
    /** The worker's record of its assignment (the registry writes it). */
    private readonly assigned: Pick<Assignment, 'owns' | 'partitions'>,
  ) {}

  /** The assignment changed: the holds apply to the new one at once. */
  applyToAssignment(): void {
    this.applyAll();
  }

  owns(topic: string, partition: number): boolean {
    return this.assigned.owns(topic, partition);
  }

  setBreakerOpen(open: boolean): void {
    if (this.breakerOpen === open) return;
    this.breakerOpen = open;
    this.applyAll();
  }

  setMemoryHigh(high: boolean): void {
    if (this.memoryHigh === high) return;
    this.memoryHigh = high;
    this.applyAll();
  }

  setShed(topic: string, on: boolean): void {
    if (this.shed.has(topic) === on) return;
    if (on) this.shed.add(topic);
    else this.shed.delete(topic);
    this.applyAll();
  }

  /** Brings every assigned partition in line with the holds (PartitionPauses ignores repeats). */
  private applyAll(): void {
    for (const { topic, partition } of this.assigned.partitions()) {
      this.pauses.set(topic, partition, 'breaker', this.breakerOpen);
      this.pauses.set(topic, partition, 'memory', this.memoryHigh);
      this.pauses.set(topic, partition, 'shed', this.shed.has(topic));
    }
  }
}
