import type { Client } from '@elastic/elasticsearch';
import type { Admin } from 'kafkajs';
import { planWorkload, type WorkloadRecord } from '../../src/generator/workload.js';
import { searchAll } from './pipeline.js';

/** Events only, no copies or poison: every record is one event document with its origin. */
export const eventsOnly = (seed: number, count: number, ratePerSec: number): WorkloadRecord[] =>
  planWorkload({
    seed,
    count,
    ratePerSec,
    clients: 200,
    profileShare: 0,
    duplicateShare: 0,
    lateDuplicateShare: 0,
    poisonShare: 0,
    hostileKeyShare: 0,
  });

/** A group's committed total on one topic, and whether every partition is committed to its end. */
export async function committedOn(
  admin: Admin,
  groupId: string,
  topic: string,
): Promise<{ total: number; atEnd: boolean }> {
  const [ends, offsets] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId, topics: [topic] }),
  ]);
  const c = new Map(offsets[0]!.partitions.map((x) => [x.partition, Number(x.offset)]));
  return {
    total: [...c.values()].reduce((a, n) => a + Math.max(0, n), 0),
    atEnd: ends.every((e) => c.get(e.partition) === Number(e.high)),
  };
}

/** Event ids in an index, by the topic their origin names. */
export async function indexedByTopic(es: Client, index: string): Promise<Map<string, Set<string>>> {
  await es.indices.refresh({ index, ignore_unavailable: true });
  const out = new Map<string, Set<string>>();
  for (const [id, doc] of await searchAll(es, index)) {
    const topic = (doc as { origin: { topic: string } }).origin.topic;
    if (!out.has(topic)) out.set(topic, new Set());
    out.get(topic)!.add(id);
  }
  return out;
}

export const idsOf = (records: readonly WorkloadRecord[]) => new Set(records.map((r) => r.id!));
