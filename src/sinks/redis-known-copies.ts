import { createHash } from 'node:crypto';
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
 * Every mark of a batch in one command: a pipeline of N SETs costs N commands' worth of
 * objects, timers and encoding in the client (it was a third of the worker's allocations).
 * KEYS are the marks, ARGV their values and then the TTL.
 */
const REMEMBER = `local ttl = ARGV[#ARGV]
for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[i], 'PX', ttl) end
return #KEYS`;
const REMEMBER_SHA = createHash('sha1').update(REMEMBER).digest('hex');

/**
 * Owner marks in Redis: `<prefix><group>:<id>` → `<index uuid>|<origin>`, with a TTL, one
 * round trip per batch either way (MGET; one script of SETs, or a pipeline where scripts are
 * not allowed). A mark counts only while the
 * index it describes is the live one (same uuid), so a deleted and rebuilt index never
 * inherits marks, and marks are scoped to the consumer group. Every failure means
 * "unknown": Elasticsearch's origin decides, nothing waits on Redis, nothing fails.
 */
export class RedisKnownCopies implements KnownCopies {
  private readonly scope: string;
  private refusals = 0;
  /** False once Redis refused the script (scripting not allowed to this user): a pipeline then. */
  private scripted = true;

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
    const epochs = this.epochsOfBatch();
    for (let i = 0; i < events.length; i++) {
      const v = values[i];
      if (typeof v !== 'string') continue;
      const bar = v.indexOf('|');
      if (bar < 0) continue;
      const epoch = await epochs(events[i]!);
      if (epoch !== undefined && v.slice(0, bar) === epoch) found.set(events[i]!.id, v.slice(bar + 1));
    }
    return found;
  }

  async remember(owners: readonly { event: EventKey; owner: OriginKey }[]): Promise<void> {
    if (owners.length === 0 || !this.health.usable) return;
    const keys: string[] = [];
    const values: string[] = [];
    const epochs = this.epochsOfBatch();
    for (const { event, owner } of owners) {
      const epoch = await epochs(event);
      if (epoch === undefined) continue;
      keys.push(this.scope + event.id);
      values.push(`${epoch}|${owner}`);
    }
    if (keys.length === 0) return;
    try {
      if (this.scripted) await this.setByScript(keys, values);
      else await this.setByPipeline(keys, values);
    } catch (err) {
      this.trouble(err);
    }
  }

  private async setByScript(keys: string[], values: string[]): Promise<void> {
    const args = [...keys, ...values, this.options.ttlMs];
    try {
      await this.redis.evalsha(REMEMBER_SHA, keys.length, ...args);
    } catch (err) {
      const message = (err as Error).message ?? '';
      if (message.startsWith('NOSCRIPT')) {
        await this.redis.eval(REMEMBER, keys.length, ...args);
        return;
      }
      if (
        (err as { name?: string }).name !== 'ReplyError' ||
        !/NOPERM|unknown command|disabled/i.test(message)
      )
        throw err;
      this.scripted = false;
      this.log.warn(
        { err: describeError(err) },
        'Redis does not run scripts for this user; owner marks go in a pipeline instead',
      );
      await this.setByPipeline(keys, values);
    }
  }

  private async setByPipeline(keys: string[], values: string[]): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (let i = 0; i < keys.length; i++) pipeline.set(keys[i]!, values[i]!, 'PX', this.options.ttlMs);
    const results = await pipeline.exec();
    const refused = results?.find(([err]) => err !== null)?.[0];
    if (refused) this.refused(refused);
  }

  /** The epoch of each event's index, read once per index for a whole batch (most share one). */
  private epochsOfBatch(): (event: EventKey) => Promise<string | undefined> {
    const byIndex = new Map<string, Promise<string | undefined>>();
    return (event) => {
      const index = eventsIndexFor(this.options.eventsIndex, event.ts);
      let epoch = byIndex.get(index);
      if (epoch === undefined) {
        epoch = this.epochs.of(index);
        byIndex.set(index, epoch);
      }
      return epoch;
    };
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
