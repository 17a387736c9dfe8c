import type { Admin } from 'kafkajs';
import type { TopicOffsets } from './policy.js';

export interface PartitionLag {
  readonly partition: number;
  readonly end: number;
  readonly committed: number;
  readonly lag: number;
}

export interface TopicLagSample extends TopicOffsets {
  readonly lag: number;
  readonly partitions: readonly PartitionLag[];
}

/**
 * The consumer group's lag, from the broker (committed offsets against the partitions'
 * ends), for every partition of the topics, whoever owns them: the same answer on every
 * worker, and right while partitions are paused (when nothing is fetched).
 * A partition without a committed offset counts from its log start.
 */
export async function sampleGroupLag(
  admin: Pick<Admin, 'fetchTopicOffsets' | 'fetchOffsets'>,
  groupId: string,
  topics: readonly string[],
): Promise<Map<string, TopicLagSample>> {
  const [ends, committed] = await Promise.all([
    Promise.all(topics.map((t) => admin.fetchTopicOffsets(t))),
    admin.fetchOffsets({ groupId, topics: [...topics] }),
  ]);
  const out = new Map<string, TopicLagSample>();
  topics.forEach((topic, i) => {
    const byPartition = new Map(
      committed.find((c) => c.topic === topic)?.partitions.map((p) => [p.partition, p.offset]) ?? [],
    );
    const partitions = ends[i]!.map((p): PartitionLag => {
      const end = Number(p.high);
      const c = byPartition.get(p.partition);
      const at = c === undefined || c === '-1' ? Number(p.low) : Number(c);
      return { partition: p.partition, end, committed: at, lag: Math.max(0, end - at) };
    });
    const sum = (f: (p: PartitionLag) => number) => partitions.reduce((a, p) => a + f(p), 0);
    out.set(topic, {
      end: sum((p) => p.end),
      committed: sum((p) => p.committed),
      lag: sum((p) => p.lag),
      partitions,
    });
  });
  return out;
}
