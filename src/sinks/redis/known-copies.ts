import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { eventsIndexFor, isDatePattern } from '../../model/event-index.js';
import { describeError } from '../../model/failures.js';
import type { OriginKey } from '../../model/message.js';
import type { CallGate, CallPass } from '../../pushback/admission/gates.js';
import type { IndexEpochs } from '../elasticsearch/index-epochs.js';
import type { EventKey, KnownCopies } from '../ports.js';
import type { RedisHealth } from './health.js';

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
   * A lookup (HMGETs) or a marking (HSET) did not happen or failed, so the worker went
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
  /** The wall clock that names the marks' generations (shared by every worker of a group). Date.now by default. */
  readonly wallClock?: () => number;
}

const NOTHING: ReadonlyMap<string, OriginKey> = new Map();

/** A failed call's reason: Redis refusing the command, a command timeout, or the connection. */
export function redisFailureReason(err: unknown): Exclude<RedisFallbackReason, 'breaker-open'> {
  if ((err as { name?: string }).name === 'ReplyError') return 'refused';
  return /timed? ?out/i.test((err as Error | undefined)?.message ?? '') ? 'timeout' : 'connection';
}

/**
 * Both generations' marks of a batch's ids in one round trip: KEYS are this generation's
 * hash and the previous one's, ARGV the ids; a mark found in either counts. In chunks,
 * because Lua's unpack takes a few thousand values at most.
 */
const LOOKUP = `local out = {}
for first = 1, #ARGV, 1000 do
  local last = math.min(first + 999, #ARGV)
  local now = redis.call('HMGET', KEYS[1], unpack(ARGV, first, last))
  local before = redis.call('HMGET', KEYS[2], unpack(ARGV, first, last))
  for i = 1, #now do out[first + i - 1] = now[i] or before[i] end
end
return out`;
const LOOKUP_SHA = createHash('sha1').update(LOOKUP).digest('hex');

/** The hash holding a pipeline's (consumer group's) marks of one generation. */
export function marksKey(keyPrefix: string, group: string, generation: number): string {
  return `${keyPrefix}${encodeURIComponent(group)}#${generation}`;
}

/** The generation of PROCESSED_TTL_MS that a wall-clock time falls in. */
export const markGeneration = (wallMs: number, ttlMs: number): number => Math.floor(wallMs / ttlMs);

/**
 * A generation's hash outlives the last read that needs it by this much: workers' clocks
 * may disagree a little about when a generation starts.
 */
const CLOCK_SKEW_MS = 60_000;

/**
 * Owner marks in Redis: which record created each event, so that a known copy skips
 * Elasticsearch. The marks of one pipeline (consumer group) live in one hash per generation
 * of PROCESSED_TTL_MS, `<prefix><group>#<generation>`, field `<id>` → `<index uuid>|<origin>`.
 * A batch writes its marks with one HSET into the current generation, and looks its ids up
 * in the current and the previous generation with one script (two HMGETs), so a mark is
 * found for between one and two TTLs after it was written. A generation's hash expires once
 * no reader needs it, and the worker unlinks it as soon as it is out of reach (UNLINK frees
 * in the background; an expiring hash of millions of fields would be freed inline).
 *
 * Why hashes, not a key per mark: a key with its own TTL (`SET … PX`, one script run per
 * batch) costs Redis several times the CPU per mark of a field of a batch's HSET, and more
 * memory; what is traded is a mark's exact expiry for expiry by generation.
 *
 * `#` never occurs in an encoded group name, so these keys cannot meet a mark key of an older
 * version (`<prefix><group>:<id>`). A mark counts only while the index it describes is the
 * live one (same uuid), so a deleted and rebuilt index never inherits marks. Every failure
 * means "unknown": Elasticsearch's origin decides, nothing waits on Redis, nothing fails.
 * Every call goes through the Redis circuit breaker (`deps.gate`): after repeated failures
 * it opens and the calls are not made at all for a cool-down (a frozen Redis would otherwise
 * cost each batch a command timeout), then a probe call decides.
 */
export class RedisKnownCopies implements KnownCopies {
  private refusals = 0;
  /** False once Redis refused the script (scripting not allowed to this user): a pipeline then. */
  private scripted = true;
  /** The generation this worker last wrote marks in: moving on unlinks the one now out of reach. */
  private writing: number | undefined;
  private readonly wallClock: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisKnownCopiesOptions,
    private readonly deps: RedisKnownCopiesDeps,
  ) {
    this.wallClock = deps.wallClock ?? Date.now;
  }

  /** The hash of a generation's marks. */
  generationKey(generation: number): string {
    return marksKey(this.options.keyPrefix, this.options.group, generation);
  }

  async owners(events: readonly EventKey[]): Promise<ReadonlyMap<string, OriginKey>> {
    if (events.length === 0) return NOTHING;
    const pass = this.pass('lookup');
    if (pass === undefined) return NOTHING;
    const generation = this.generation();
    const ids = events.map((e) => e.id);
    let values: (string | null)[];
    try {
      values = this.scripted
        ? await this.lookUpByScript(generation, ids)
        : await this.lookUpByPipeline(generation, ids);
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
    const fieldsAndValues: string[] = [];
    const epochOf = await this.epochsOf(owners.map((o) => o.event));
    for (const { event, owner } of owners) {
      const epoch = epochOf(event);
      if (epoch === undefined) continue;
      // One flat string (see originKeyOf), not pieces kept for the round trip and then copied.
      fieldsAndValues.push(event.id, [epoch, owner].join('|'));
    }
    if (fieldsAndValues.length === 0) return;
    const pass = this.pass('mark');
    if (pass === undefined) return;
    const generation = this.generation();
    const key = this.generationKey(generation);
    const pipeline = this.redis.pipeline();
    pipeline.hset(key, ...fieldsAndValues);
    // Read until the next generation ends: expire after that, whoever wrote last.
    pipeline.pexpireat(key, (generation + 2) * this.options.ttlMs + CLOCK_SKEW_MS);
    if (this.writing !== undefined && this.writing < generation)
      pipeline.unlink(this.generationKey(generation - 2));
    try {
      // exec() resolves even when every command failed: timeouts and refusals come back per command.
      const failed = (await pipeline.exec())?.find(([err]) => err !== null)?.[0];
      if (failed) this.trouble('mark', pass, failed);
      else {
        pass.release('ok');
        this.writing = generation;
      }
    } catch (err) {
      this.trouble('mark', pass, err);
    }
  }

  private generation(): number {
    return markGeneration(this.wallClock(), this.options.ttlMs);
  }

  /** Both generations' marks in one script run; falls back to a pipeline where scripts are refused. */
  private async lookUpByScript(generation: number, ids: string[]): Promise<(string | null)[]> {
    const keys = [this.generationKey(generation), this.generationKey(generation - 1)] as const;
    try {
      return (await this.redis.evalsha(LOOKUP_SHA, 2, ...keys, ...ids)) as (string | null)[];
    } catch (err) {
      const message = (err as Error).message ?? '';
      if (message.startsWith('NOSCRIPT')) return (await this.redis.eval(LOOKUP, 2, ...keys, ...ids)) as never;
      if (
        (err as { name?: string }).name !== 'ReplyError' ||
        !/NOPERM|unknown command|disabled/i.test(message)
      )
        throw err;
      this.scripted = false;
      this.deps.log.warn(
        { err: describeError(err) },
        'Redis does not run scripts for this user; owner marks are looked up with a pipeline instead',
      );
      return this.lookUpByPipeline(generation, ids);
    }
  }

  /** Two HMGETs in a pipeline; throws the first command's failure (exec() itself resolves). */
  private async lookUpByPipeline(generation: number, ids: string[]): Promise<(string | null)[]> {
    const answers = await this.redis
      .pipeline()
      .hmget(this.generationKey(generation), ...ids)
      .hmget(this.generationKey(generation - 1), ...ids)
      .exec();
    const failed = answers?.find(([err]) => err !== null)?.[0];
    if (failed || answers === null || answers.length < 2)
      throw failed ?? new Error('Redis pipeline answered nothing');
    const now = answers[0]![1] as (string | null)[];
    const before = answers[1]![1] as (string | null)[];
    return now.map((v, i) => v ?? before[i] ?? null);
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
