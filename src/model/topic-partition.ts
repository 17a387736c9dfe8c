/**
 * The one key of a topic-partition in the worker's maps and sets, and how it reads in a
 * message: `topic[partition]`. A Kafka topic name holds only letters, digits, `.`, `_` and
 * `-`, so no two topic-partitions share a key.
 */
export const partitionKey = (topic: string, partition: number): string => `${topic}[${partition}]`;

/** Partitions per topic, as the group assigns them to a member (kafkajs's memberAssignment). */
export type MemberAssignment = Readonly<Record<string, readonly number[]>>;

/**
 * The partitions the group assigned to this worker now: the one record of it. The partition
 * registry writes it on every GROUP_JOIN and runs a partition for each; push-back's holds
 * read it to pause what they hold and to export lag only for partitions owned here.
 */
export class Assignment {
  private current: MemberAssignment = {};
  private keys = new Set<string>();

  set(assignment: MemberAssignment): void {
    this.current = assignment;
    const keys = new Set<string>();
    for (const [topic, partitions] of Object.entries(assignment))
      for (const partition of partitions) keys.add(partitionKey(topic, partition));
    this.keys = keys;
  }

  owns(topic: string, partition: number): boolean {
    return this.keys.has(partitionKey(topic, partition));
  }

  /** How many partitions are assigned. */
  get size(): number {
    return this.keys.size;
  }

  /** Whether the partition of this partitionKey is assigned. */
  ownsKey(key: string): boolean {
    return this.keys.has(key);
  }

  /** Every assigned partition, topic by topic. */
  *partitions(): IterableIterator<{ readonly topic: string; readonly partition: number }> {
    for (const [topic, partitions] of Object.entries(this.current))
      for (const partition of partitions) yield { topic, partition };
  }
}
