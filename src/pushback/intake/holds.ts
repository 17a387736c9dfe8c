import type { PartitionPauses } from './partition-pauses.js';

/**
 * The worker-wide holds on intake that push-back decides: every partition while the
 * Elasticsearch breaker is open (reason `breaker`) or the live heap is near its limit
 * (reason `memory`), a shed topic's partitions (reason `shed`). They apply to whatever this worker is assigned now, and to what it is assigned
 * later (`assign`, from every GROUP_JOIN, after the registry let go of revoked
 * partitions); PartitionPauses keeps them apart from the
 * per-partition reasons (`starting`, `backpressure`), so a partition is fetched again only
 * when nothing holds it.
 */
export class PushbackHolds {
  private breakerOpen = false;
  private memoryHigh = false;
  private readonly shed = new Set<string>();
  private assigned: Readonly<Record<string, readonly number[]>> = {};

  constructor(private readonly pauses: Pick<PartitionPauses, 'set'>) {}

  /** The group's new assignment for this worker: the holds apply to it at once. */
  assign(assignment: Readonly<Record<string, readonly number[]>>): void {
    this.assigned = assignment;
    this.applyAll();
  }

  owns(topic: string, partition: number): boolean {
    return this.assigned[topic]?.includes(partition) ?? false;
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
    for (const [topic, partitions] of Object.entries(this.assigned))
      for (const partition of partitions) {
        this.pauses.set(topic, partition, 'breaker', this.breakerOpen);
        this.pauses.set(topic, partition, 'memory', this.memoryHigh);
        this.pauses.set(topic, partition, 'shed', this.shed.has(topic));
      }
  }
}
