import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { eventsIndexFor } from '../model/event-index.js';
import { describeError } from '../model/failures.js';
import type { OriginKey } from '../model/message.js';
import type { IndexEpochs } from './elasticsearch-index-epochs.js';
import type { EventKey, KnownCopies } from './ports.js';
import type { RedisHealth } from './redis-health.js';

export interface RedisKnownCopiesOptions {
  readonly keyPrefix: string;
  /** The pipeline (consumer group): marks of one pipeline are never read by another. */
  readonly group: string;
  readonly ttlMs: number;
  /** EVENTS_INDEX: a name or a date pattern, to find the index (and its epoch) of an event. */
  readonly eventsIndex: string;
}

const NOTHING: ReadonlyMap<string, OriginKey> = new Map();

/**
 * Owner marks in Redis: `<prefix><group>:<id>` → `<index uuid>|<origin>`, with a TTL, one
 * round trip per batch either way (MGET; a pipeline of SETs). A mark counts only while the
 * index it describes is the live one (same uuid), so a deleted and rebuilt index never
 * inherits marks, and marks are scoped to the consumer group. Every failure means
 * "unknown": Elasticsearch's origin decides, nothing waits on Redis, nothing fails.
 */
export class RedisKnownCopies implements KnownCopies {
  private readonly scope: string;
  private refusals = 0;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisKnownCopiesOptions,
    private readonly epochs: IndexEpochs,
    private readonly health: RedisHealth,
    private readonly log: Logger,
  ) {
    this.scope = `${options.keyPrefix}${encodeURIComponent(options.group)}:`;
  }

  async owners(events: readonly EventKey[]): Promise<ReadonlyMap<string, OriginKey>> {
    if (events.length === 0 || !this.health.usable) return NOTHING;
    let values: (string | null)[];
    try {
      values = await this.redis.mget(events.map((e) => this.scope + e.id));
    } catch (err) {
      this.trouble(err);
      return NOTHING;
    }
    const found = new Map<string, OriginKey>();
    for (let i = 0; i < events.length; i++) {
      const v = values[i];
      if (typeof v !== 'string') continue;
      const bar = v.indexOf('|');
      if (bar < 0) continue;
      const epoch = await this.epochs.of(eventsIndexFor(this.options.eventsIndex, events[i]!.ts));
      if (epoch !== undefined && v.slice(0, bar) === epoch) found.set(events[i]!.id, v.slice(bar + 1));
    }
    return found;
  }

  async remember(owners: readonly { event: EventKey; owner: OriginKey }[]): Promise<void> {
    if (owners.length === 0 || !this.health.usable) return;
    const pipeline = this.redis.pipeline();
    let n = 0;
    for (const { event, owner } of owners) {
      const epoch = await this.epochs.of(eventsIndexFor(this.options.eventsIndex, event.ts));
      if (epoch === undefined) continue;
      pipeline.set(this.scope + event.id, `${epoch}|${owner}`, 'PX', this.options.ttlMs);
      n++;
    }
    if (n === 0) return;
    try {
      const results = await pipeline.exec();
      const refused = results?.find(([err]) => err !== null)?.[0];
      if (refused) this.refused(refused);
    } catch (err) {
      this.trouble(err);
    }
  }

  /** The connection is the problem (timeout, refused, closed): stop asking until the probe says so; a reply error is Redis refusing. */
  private trouble(err: unknown): void {
    if ((err as { name?: string }).name === 'ReplyError') this.refused(err);
    else this.health.failed(err);
  }

  /** Redis answers but refuses writes (OOM, READONLY): marks are lost, nothing else; say so now and then. */
  private refused(err: unknown): void {
    if (this.refusals++ % 1000 === 0) {
      this.log.warn(
        { err: describeError(err), times: this.refusals },
        'Redis refuses owner marks; ingesting without them',
      );
    }
  }
}
