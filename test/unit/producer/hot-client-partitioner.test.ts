import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { hotClientPartitioner } from '../../../src/producer/index.js';

const partitionMetadata: PartitionMetadata[] = Array.from({ length: 8 }, (_, partitionId) => ({
  partitionId,
  leader: 0,
  partitionErrorCode: 0,
  replicas: [0],
  isr: [0],
}));

const hot = new Map([['c-hot', 4]]);
const partition = hotClientPartitioner((topic) => (topic === 't' ? hot : undefined))();
const kafkaDefault = Partitioners.DefaultPartitioner();
const at = (key: string, value: string | null, topic = 't') =>
  partition({ topic, partitionMetadata, message: { key, value } });
const own = (key: string) => kafkaDefault({ topic: 't', partitionMetadata, message: { key, value: 'x' } });

describe('hotClientPartitioner', () => {
  it('puts every other client where the default (murmur2) partitioner does', () => {
    for (let i = 0; i < 500; i++) {
      const key = `c-${i}`;
      expect(at(key, `{"id":"${i}"}`)).toBe(own(key));
    }
  });

  it('spreads a hot client over exactly `spread` partitions, starting at its own', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 400; i++) seen.add(at('c-hot', `{"id":"${i}"}`));
    const first = own('c-hot');
    expect([...seen].sort()).toEqual([0, 1, 2, 3].map((k) => (first + k) % 8).sort());
  });

  it('keeps a re-sent copy (same bytes) on the same partition, and a tombstone on the client’s own', () => {
    const value = '{"id":"dup-1","clientId":"c-hot"}';
    expect(new Set(Array.from({ length: 10 }, () => at('c-hot', value))).size).toBe(1);
    expect(at('c-hot', null)).toBe(own('c-hot'));
  });

  it('a client hot on another topic is not spread here', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 100; i++) seen.add(at('c-hot', `{"id":"${i}"}`, 'other'));
    expect(seen.size).toBe(1);
  });

  it('never spreads wider than the topic has partitions', () => {
    const wide = hotClientPartitioner(() => new Map([['c-hot', 100]]))();
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++)
      seen.add(wide({ topic: 't', partitionMetadata, message: { key: 'c-hot', value: `${i}` } }));
    expect(seen.size).toBe(8);
  });
});
