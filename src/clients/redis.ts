import { Redis, type RedisOptions } from 'ioredis';
import { redactUrl } from '../config/redact-url.js';
import type { RedisSecurity } from '../config/security.js';
import { StartupCheckError } from './startup-check-error.js';
import { tlsProblem } from './tls-problem.js';

/** Where and how to connect: the part of Config['redis'] every client needs. */
export interface RedisConnection extends RedisSecurity {
  /** redis:// or rediss:// (TLS), with the password in it when the server has one. */
  readonly url: string;
}

/** ioredis options from the connection settings and the caller's own (timeouts, queueing). */
export function redisClientOptions(
  conn: RedisConnection,
  options: Omit<RedisOptions, 'tls'> = {},
): RedisOptions {
  const tls = conn.url.toLowerCase().startsWith('rediss:');
  return tls ? { ...options, tls: conn.caCert === undefined ? {} : { ca: conn.caCert } } : { ...options };
}

/** The ioredis client every part of rxingest uses (worker, tools). */
export function createRedis(conn: RedisConnection, options: Omit<RedisOptions, 'tls'> = {}): Redis {
  // ioredis takes rediss:// itself only case-sensitively; the scheme is normalised here.
  return new Redis(
    conn.url.replace(/^rediss?:/i, (s) => s.toLowerCase()),
    redisClientOptions(conn, options),
  );
}

const where = (conn: RedisConnection) => `Redis at ${redactUrl(conn.url)}`;

/**
 * The one-line cause when connecting failed because of the configuration (password, TLS), or
 * undefined when Redis is merely unavailable (refused, timed out, closed, loading).
 */
export function redisMisconfiguration(conn: RedisConnection, err: unknown): string | undefined {
  const message = (err as Error | undefined)?.message ?? String(err);
  const first = message.split(/\s/)[0] ?? '';
  if (first === 'WRONGPASS') return `${where(conn)}: wrong password or user name (WRONGPASS)`;
  if (first === 'NOAUTH') {
    return `${where(conn)}: the server requires a password (NOAUTH): put it in REDIS_URL (redis://:password@host:port)`;
  }
  if (/AUTH.*without any password configured|called without any password/i.test(message)) {
    return `${where(conn)}: REDIS_URL has a password but the server has none (ERR AUTH)`;
  }
  if (first === 'NOPERM') return `${where(conn)}: the user may not run the commands rxingest needs (NOPERM)`;
  const tls = tlsProblem(err);
  if (tls?.kind === 'untrusted') {
    return `${where(conn)}: TLS: ${tls.text}; set REDIS_CA_CERT to the CA that signed the server's certificate`;
  }
  if (tls?.kind === 'not-tls') return `${where(conn)}: TLS: ${tls.text}; use redis:// for a plain port`;
  if (tls !== undefined) return `${where(conn)}: TLS: ${tls.text}`;
  return undefined;
}

/** One line for any failure to reach Redis: the misconfiguration if it is one, else "unreachable". */
export function describeRedisFailure(conn: RedisConnection, err: unknown): string {
  return (
    redisMisconfiguration(conn, err) ??
    `${where(conn)} is unreachable: ${(err as Error | undefined)?.message ?? String(err)}`
  );
}

export type RedisProbe = { readonly up: true } | { readonly up: false; readonly reason: string };

/**
 * One connection attempt and a PING, without retries. Resolves `{ up: true }` when Redis
 * answers, `{ up: false, reason }` when it is down or unreachable (the worker carries on
 * without it), and throws a StartupCheckError when it is misconfigured (wrong password, TLS
 * trouble): a start must stop on that with one line.
 */
export async function probeRedis(conn: RedisConnection, { timeoutMs = 2_000 } = {}): Promise<RedisProbe> {
  const redis = createRedis(conn, {
    lazyConnect: true,
    enableOfflineQueue: false,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    // ioredis re-sends AUTH on reconnect; one attempt is the whole probe.
    reconnectOnError: () => false,
  });
  // The socket's own error (TLS, refused) reaches the 'error' event first, then connect()
  // rejects with a generic "Connection is closed": keep the first, which says why.
  let first: unknown;
  redis.on('error', (err) => {
    first ??= err;
  });
  try {
    await redis.connect();
    await redis.ping();
    return { up: true };
  } catch (err) {
    const cause = first ?? err;
    const misconfigured = redisMisconfiguration(conn, cause);
    if (misconfigured !== undefined) throw new StartupCheckError('Redis', misconfigured);
    return {
      up: false,
      reason: `${where(conn)} is unreachable: ${(cause as Error)?.message ?? String(cause)}`,
    };
  } finally {
    redis.disconnect();
  }
}
