import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProcessedStore } from './ports.js';

export interface RedisProcessedStoreOptions {
  readonly keyPrefix: string;
  readonly ttlMs: number;
}

/**
 * Processed-id marks in Redis: `<prefix><id>` → origin, with a TTL. One round
 * trip per batch either way (MGET to look up; a pipeline of SET NX GET to claim).
 *
 * The client should be created with `enableOfflineQueue: false` and a
 * `commandTimeout`, so that a Redis outage fails fast instead of queueing.
 */
export class RedisProcessedStore implements ProcessedStore {
  constructor(
    private readonly redis: Redis,
    private readonly options: RedisProcessedStoreOptions,
    private readonly log: Logger,
  ) {}

  async lookup(ids: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const found = new Map<string, string>();
    if (ids.length === 0) return found;
    try {
      const values = await this.redis.mget(ids.map((id) => this.options.keyPrefix + id));
      values.forEach((v, i) => {
        if (v !== null) found.set(ids[i]!, v);
      });
    } catch (err) {
      // Unknown is safe here: Elasticsearch's create (409) and the claim still catch copies.
      this.log.warn(
        { err, ids: ids.length },
        'Redis lookup failed; treating ids as not known to be processed',
      );
    }
    return found;
  }

  async claim(entries: readonly { id: string; origin: string }[]): Promise<string[]> {
    if (entries.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const { id, origin } of entries) {
      // SET … NX GET (Redis ≥ 7): sets only if absent and answers the previous value.
      pipeline.set(this.options.keyPrefix + id, origin, 'PX', this.options.ttlMs, 'NX', 'GET');
    }
    const results = await pipeline.exec();
    if (results === null) throw new Error('Redis claim: pipeline was discarded');
    return results.map(([err, previous], i) => {
      if (err) throw new Error(`Redis claim of id ${entries[i]!.id} failed: ${err.message}`);
      return typeof previous === 'string' ? previous : entries[i]!.origin;
    });
  }
}
