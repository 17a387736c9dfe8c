import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { eventsIndexFor, isDatePattern } from '../model/event-index.js';
import { describeError } from '../model/failures.js';
import type { OriginKey } from '../model/message.js';
import type { IndexEpochs } from './elasticsearch-index-epochs.js';
import type { CallGate, CallPass, EventKey, KnownCopies } from './ports.js';
import type { RedisHealth } from './redis-health.js';

export interface RedisKnownCopiesOptions {
  readonly keyPrefix: string;
  /** The pipeline (consumer group): marks of one pipeline are never read by another. */
  readonly group: string;
  readonly ttlMs: number;
  /** EVENTS_INDEX: a name or a date pattern, to find the index (and its epoch) of an event. */
  readonly eventsIndex: string;
}

/** Why a Redis call gave its fallback: bounded label values (`rxingest_retries_total{target="redis",reason}`). */
export type RedisFallbackReason = 'timeout' | 'connection' | 'refused' | 'breaker-open';

/** What the owner marks report about Redis (the worker's metrics implement it). */
export interface RedisObserver {
  /**
   * A lookup (MGET) or a marking (SET pipeline) did not happen or failed, so the worker went
   * on without it: the ids are "unknown", Elasticsearch decides.
   */
  fallback(op: 'lookup' | 'mark', reason: RedisFallbackReason): void;
}

export interface RedisKnownCopiesDeps {
  readonly epochs: Pick<IndexEpochs, 'of'>;
  /** Told of connection trouble (`rxingest_redis_up`, one log line per change); its probe brings it back. */
  readonly health: Pick<RedisHealth, 'failed'>;
  /** The Redis circuit breaker: while it is open, no call goes out. */
  readonly gate: CallGate;
  readonly observer?: RedisObserver;
  readonly log: Logger;
}

const NOTHING: ReadonlyMap<string, OriginKey> = new Map();

/** A failed call's reason: Redis refusing the command, a command timeout, or the connection. */
export function redisFailureReason(err: unknown): Exclude<RedisFallbackReason, 'breaker-open'> {
  if ((err as { name?: string }).name === 'ReplyError') return 'refused';
  return /timed? ?out/i.test((err as Error | undefined)?.message ?? '') ? 'timeout' : 'connection';
}

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
 * round trip per batch either way (MGET; one script of SETs, or a pipeline where scripts are not allowed). A mark counts only while the
 * index it describes is the live one (same uuid), so a deleted and rebuilt index never
 * inherits marks, and marks are scoped to the consumer group. Every failure means
 * "unknown": Elasticsearch's origin decides, nothing waits on Redis, nothing fails.
 *
 * Every call goes through the Redis circuit breaker (`deps.gate`): after repeated
 * failures it opens and the calls are not made at all for a cool-down (a frozen Redis
 * would otherwise cost each batch a command timeout), then a probe call decides.
 */
export class RedisKnownCopies implements KnownCopies {
  private readonly scope: string;
  private refusals = 0;
  /** False once Redis refused the script (scripting not allowed to this user): a pipeline then. */
  private scripted = true;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisKnownCopiesOptions,
    private readonly deps: RedisKnownCopiesDeps,
  ) {
    this.scope = `${options.keyPrefix}${encodeURIComponent(options.group)}:`;
  }

  async owners(events: readonly EventKey[]): Promise<ReadonlyMap<string, OriginKey>> {
    if (events.length === 0) return NOTHING;
    const pass = this.pass('lookup');
    if (pass === undefined) return NOTHING;
    let values: (string | null)[];
    try {
      values = await this.redis.mget(events.map((e) => this.scope + e.id));
      pass.release('ok');
    } catch (err) {
      this.trouble('lookup', pass, err);
      return NOTHING;
    }
    const marked: number[] = [];
    for (let i = 0; i < events.length; i++) {
      const v = values[i];
      if (typeof v === 'string' && v.includes('|')) marked.push(i);
    }
    // Only marks found need their index's epoch (a fresh batch has none to look up).
    if (marked.length === 0) return NOTHING;
    const found = new Map<string, OriginKey>();
    const epochOf = await this.epochsOf(marked.map((i) => events[i]!));
    for (const i of marked) {
      const v = values[i] as string;
      const bar = v.indexOf('|');
      const epoch = epochOf(events[i]!);
      if (epoch !== undefined && v.slice(0, bar) === epoch) found.set(events[i]!.id, v.slice(bar + 1));
    }
    return found;
  }

  async remember(owners: readonly { event: EventKey; owner: OriginKey }[]): Promise<void> {
    if (owners.length === 0) return;
    const keys: string[] = [];
    const values: string[] = [];
    const epochOf = await this.epochsOf(owners.map((o) => o.event));
    for (const { event, owner } of owners) {
      const epoch = epochOf(event);
      if (epoch === undefined) continue;
      keys.push(this.scope + event.id);
      values.push(`${epoch}|${owner}`);
    }
    if (keys.length === 0) return;
    const pass = this.pass('mark');
    if (pass === undefined) return;
    try {
      const failed = this.scripted
        ? await this.setByScript(keys, values)
        : await this.setByPipeline(keys, values);
      if (failed) this.trouble('mark', pass, failed);
      else pass.release('ok');
    } catch (err) {
      this.trouble('mark', pass, err);
    }
  }

  /** All marks in one script run; throws what the call failed with. */
  private async setByScript(keys: string[], values: string[]): Promise<unknown> {
    const args = [...keys, ...values, this.options.ttlMs];
    try {
      await this.redis.evalsha(REMEMBER_SHA, keys.length, ...args);
      return undefined;
    } catch (err) {
      const message = (err as Error).message ?? '';
      if (message.startsWith('NOSCRIPT')) {
        await this.redis.eval(REMEMBER, keys.length, ...args);
        return undefined;
      }
      if (
        (err as { name?: string }).name !== 'ReplyError' ||
        !/NOPERM|unknown command|disabled/i.test(message)
      )
        throw err;
      this.scripted = false;
      this.deps.log.warn(
        { err: describeError(err) },
        'Redis does not run scripts for this user; owner marks go in a pipeline instead',
      );
      return this.setByPipeline(keys, values);
    }
  }

  /**
   * One SET per mark in a pipeline. exec() resolves even when every command failed: a
   * pipeline's command timeouts and refusals come back per command; the first is returned.
   */
  private async setByPipeline(keys: string[], values: string[]): Promise<unknown> {
    const pipeline = this.redis.pipeline();
    for (let i = 0; i < keys.length; i++) pipeline.set(keys[i]!, values[i]!, 'PX', this.options.ttlMs);
    return (await pipeline.exec())?.find(([err]) => err !== null)?.[0] ?? undefined;
  }

  /**
   * The epoch of each event's index, read once per index for a whole batch (most share one),
   * all awaited at once: awaiting per event cost a turn of the microtask queue per event.
   */
  private async epochsOf(events: readonly EventKey[]): Promise<(event: EventKey) => string | undefined> {
    const { eventsIndex } = this.options;
    const indexOf = (event: EventKey) => eventsIndexFor(eventsIndex, event.ts);
    // Without a date pattern every event has the same index: no per-event lookups at all.
    if (!isDatePattern(eventsIndex)) {
      const epoch = await this.deps.epochs.of(eventsIndex);
      return () => epoch;
    }
    const indices = [...new Set(events.map(indexOf))];
    const epochs = await Promise.all(indices.map((index) => this.deps.epochs.of(index)));
    const byIndex = new Map(indices.map((index, i) => [index, epochs[i]]));
    return (event) => byIndex.get(indexOf(event));
  }

  /** A pass from the breaker, or undefined (counted): it is open, do not call. */
  private pass(op: 'lookup' | 'mark'): CallPass | undefined {
    const pass = this.deps.gate.tryPass();
    if (pass === undefined) this.deps.observer?.fallback(op, 'breaker-open');
    return pass;
  }

  /**
   * A reply error is Redis refusing (it answered: not a breaker failure); anything else —
   * a command timeout, a refused or closed connection — counts against the breaker and
   * tells the health (the metric, one log line, its probe).
   */
  private trouble(op: 'lookup' | 'mark', pass: CallPass, err: unknown): void {
    const reason = redisFailureReason(err);
    if (reason === 'refused') {
      pass.release('ok');
      this.refused(op, err);
      return;
    }
    pass.release('failed');
    this.deps.observer?.fallback(op, reason);
    this.deps.health.failed(err);
  }

  /** Redis answers but refuses writes (OOM, READONLY): marks are lost, nothing else; say so now and then. */
  private refused(op: 'lookup' | 'mark', err: unknown): void {
    this.deps.observer?.fallback(op, 'refused');
    if (this.refusals++ % 1000 === 0) {
      this.deps.log.warn(
        { err: describeError(err), times: this.refusals },
        'Redis refuses owner marks; ingesting without them',
      );
    }
  }
}
