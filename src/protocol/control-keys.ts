/**
 * What the worker publishes for producers in Redis, and how producers read it: the key
 * layout and the scripts, shared by src/control (the writers) and src/producer (the
 * readers). Every key lives under a prefix (CONTROL_KEY_PREFIX, default
 * `rxingest:control:`) and expires unless refreshed, so that a worker that dies, or a Redis
 * that is flushed, lifts everything: producers then send as they would without rxingest's
 * push-back. Why Redis and not a compacted topic: these values are only valid while a live
 * worker refreshes them (a TTL says that by itself; a topic would need clocks compared
 * across machines), and producers are many and light: one small script call a second each,
 * instead of a Kafka consumer in every application.
 */

export const DEFAULT_CONTROL_KEY_PREFIX = 'rxingest:control:';

export const controlKeys = (prefix: string) => ({
  /** String, JSON {@link PublishedLimit}: the rate limit of a topic's producers (all of them together). */
  limit: (topic: string) => `${prefix}limit:${topic}`,
  /** Sorted set: producer id → last seen (Redis time, ms): how many producers share the limit. */
  producers: (topic: string) => `${prefix}producers:${topic}`,
  /** Hash: clientId → spread (partitions): the topic's hot clients. */
  hot: (topic: string) => `${prefix}hot:${topic}`,
  /** Hashes: clientId → messages seen in one interval, lower and upper bounds, summed over workers. */
  rates: (topic: string, interval: number, bound: 'lo' | 'hi') =>
    `${prefix}rates:${topic}:${interval}:${bound}`,
});

export interface PublishedLimit {
  /** Messages per second for all the topic's producers together. */
  readonly ratePerSec: number;
  /** The consumer group that asked for it (the lowest limit of the groups reading a topic wins). */
  readonly group: string;
  /** The lag that caused it, and when (ISO 8601): for operators. */
  readonly lag: number;
  readonly at: string;
}

/**
 * Sets a group's limit unless another group holds a lower one (which then stays until it
 * expires or its group lifts it): with several pipelines on one topic, the slowest rules.
 * KEYS[1] limit key; ARGV group, rate, ttl ms, JSON value. Returns 1 if set.
 */
export const SET_LIMIT_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and type(c) == 'table' and c.group ~= ARGV[1] and tonumber(c.ratePerSec) ~= nil and tonumber(c.ratePerSec) < tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[3])
return 1`;

/** Deletes the limit if this group set it. KEYS[1] limit key; ARGV group. Returns 1 if deleted. */
export const LIFT_LIMIT_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and type(c) == 'table' and c.group == ARGV[1] then
    redis.call('DEL', KEYS[1])
    return 1
  end
end
return 0`;

/**
 * A producer's one call a second: registers it as alive for each topic and reads, per
 * topic, the number of live producers, the limit and the hot set.
 * KEYS: for each topic, [producers key, limit key, hot key]; ARGV: producer id, stale ms.
 * Returns, per topic, { producers, limit JSON or false, flat hot hash }.
 */
export const READ_CONTROL_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stale = tonumber(ARGV[2])
local out = {}
for i = 1, #KEYS, 3 do
  redis.call('ZADD', KEYS[i], now, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - stale)
  redis.call('PEXPIRE', KEYS[i], stale * 3)
  table.insert(out, redis.call('ZCARD', KEYS[i]))
  table.insert(out, redis.call('GET', KEYS[i + 1]))
  table.insert(out, redis.call('HGETALL', KEYS[i + 2]))
end
return out`;

/** Removes a producer from the topics' live sets (on close). KEYS: producers keys; ARGV: producer id. */
export const LEAVE_SCRIPT = `
for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 1`;
