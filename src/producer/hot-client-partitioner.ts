import { type ICustomPartitioner, Partitioners } from 'kafkajs';

/** The hot clients of a topic: clientId → how many partitions to spread it over. */
export type HotClients = (topic: string) => ReadonlyMap<string, number> | undefined;

/** FNV-1a over the bytes: cheap, stable, and equal bytes give equal sub-keys. */
function fnv1a(bytes: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const toBuffer = (v: Buffer | string | null | undefined): Buffer | undefined =>
  v === null || v === undefined ? undefined : typeof v === 'string' ? Buffer.from(v) : v;

/**
 * A kafkajs partitioner that spreads each hot client's messages over several partitions
 * and leaves everyone else where Kafka's default partitioner (murmur2 of the key, as the
 * Java client) puts them.
 *
 * The record key stays the clientId (the contract's key). A hot client's message gets a
 * sub-key `hash(value) mod spread`, and sub-key i goes to the i-th partition after the
 * client's own (so `spread` distinct partitions, sub-key 0 on the client's own one).
 * Hashing the value keeps a re-sent copy on the same partition as the original (the
 * worker's in-window dedup sees both); a null value (tombstone) stays on the client's own
 * partition.
 *
 * What a hot client gives up: its messages are processed by several partitions at once,
 * so its events may be indexed out of order. Its profile stays exact (the per-field
 * version rule does not depend on arrival order) and each event is indexed once (the id
 * is the document id).
 */
export function hotClientPartitioner(hot: HotClients): ICustomPartitioner {
  return () => {
    const base = Partitioners.DefaultPartitioner();
    return (args) => {
      const own = base(args);
      const { topic, partitionMetadata, message } = args;
      const key = toBuffer(message.key)?.toString('utf8');
      const spread = key === undefined ? undefined : hot(topic)?.get(key);
      const value = toBuffer(message.value);
      if (spread === undefined || spread < 2 || value === undefined) return own;
      const ids = partitionMetadata.map((p) => p.partitionId).sort((a, b) => a - b);
      const width = Math.min(spread, ids.length);
      const sub = fnv1a(value) % width;
      const at = ids.indexOf(own);
      return ids[(at + sub) % ids.length]!;
    };
  };
}
