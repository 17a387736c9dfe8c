import type { GraphSettings } from '../../src/config/config.js';
import type { RawRecord } from '../../src/model/message.js';

export const testSettings = (overrides: Partial<GraphSettings> = {}): GraphSettings => ({
  maxMessageBytes: 1024 * 1024,
  dedupWindowMs: 10_000,
  clientIdleMs: 30_000,
  batchMax: 1000,
  batchMs: 100,
  highWater: 10_000,
  lowWater: 5_000,
  commitIntervalMs: 500,
  commitEvery: 5_000,
  retryBaseMs: 10,
  retryMaxMs: 100,
  tombstones: 'dead-letter',
  ...overrides,
});

/** Builds Kafka-like records with increasing offsets for one partition. */
export function recordFactory(topic = 'ingest.events', partition = 0) {
  let offset = 0;
  const make = (value: unknown, key?: string): RawRecord => ({
    topic,
    partition,
    offset: String(offset++),
    key: key === undefined ? null : Buffer.from(key),
    value: value === null ? null : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
  });
  return {
    event: (id: string, clientId: string, name = 'login', data: Record<string, unknown> = {}) =>
      make({ id, clientId, type: 'event', name, ts: '2026-11-30T12:00:00.000Z', data }, clientId),
    profile: (id: string, clientId: string, version: number, data: Record<string, unknown>) =>
      make({ id, clientId, type: 'profile', version, ts: '2026-11-30T12:00:00.000Z', data }, clientId),
    raw: (value: string | null, key?: string) => make(value, key),
    skip: (n: number) => {
      offset += n;
    },
  };
}
