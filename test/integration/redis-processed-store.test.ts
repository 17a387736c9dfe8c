import { once } from 'node:events';
import { createServer, type Server, Socket } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisProcessedStore } from '../../src/sinks/redis-processed-store.js';
import { stackEnv, uniqueName, waitFor } from '../support/stack.js';

/**
 * RedisProcessedStore against the real Redis: what InMemoryProcessedStore stands
 * for (lookup answers only known ids; a claim keeps the first origin), plus what
 * only the real one has: one MGET per lookup, SET NX GET with a TTL, and failing
 * fast (not queueing) when Redis is away.
 */

/** The options the worker creates its client with: an outage must fail fast. */
const workerOptions: RedisOptions = {
  enableOfflineQueue: false,
  commandTimeout: 1000,
  maxRetriesPerRequest: 1,
};

const captureLog = () => {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { log, lines };
};

/** Watches the real server (MONITOR) for commands that touch keys under `prefix`. */
async function watchCommands(monitorOf: Redis, prefix: string) {
  const monitor = await monitorOf.monitor();
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.some((a) => a.startsWith(prefix))) seen.push(args);
  });
  let n = 0;
  return {
    /**
     * The commands seen since the last call. A sentinel GET sent on `client` after the
     * operation marks the end: MONITOR reports commands in execution order, so once the
     * sentinel shows, everything the operation sent has shown too.
     */
    async take(client: Redis): Promise<string[][]> {
      const sentinel = `${prefix}__sentinel-${n++}`;
      await client.get(sentinel);
      await waitFor('the sentinel in MONITOR', () => seen.some((c) => c[1] === sentinel), {
        timeoutMs: 5000,
        intervalMs: 20,
      });
      const i = seen.findIndex((c) => c[1] === sentinel);
      return seen.splice(0, i + 1).slice(0, i);
    },
    close: () => monitor.disconnect(),
  };
}

/** Deletes every key under `prefix` (SCAN, so it never blocks the shared server). */
async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** A port on which nothing listens (it was just free). */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * A TCP proxy in front of the real Redis that can be frozen: the connection stays
 * open but nothing more passes, as when Redis hangs or the network drops packets.
 */
async function freezableProxy(target: URL) {
  let frozen = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (d: Buffer) => frozen || upstream.write(d));
    upstream.on('data', (d: Buffer) => frozen || client.write(d));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => {
      frozen = true;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
describe('RedisProcessedStore against the real Redis', () => {
  const prefix = `${uniqueName('rxingest-test-processed')}:`;
  let redis: Redis;
  let raw: Redis;
  let commands: Awaited<ReturnType<typeof watchCommands>>;

  beforeAll(async () => {
    redis = new Redis(stackEnv.redisUrl, workerOptions);
    raw = new Redis(stackEnv.redisUrl);
    await Promise.all([once(redis, 'ready'), once(raw, 'ready')]);
    commands = await watchCommands(raw, prefix);
  });

  afterEach(async () => {
    await commands.take(raw); // drop whatever a test left unread
  });

  afterAll(async () => {
    await deleteKeys(raw, prefix);
    commands.close();
    redis.disconnect();
    raw.disconnect();
  });

  const store = (ttlMs = 60_000) =>
    new RedisProcessedStore(redis, { keyPrefix: prefix, ttlMs }, captureLog().log);

  it('lookup answers the origins of the known ids only, with one MGET for the whole batch', async () => {
    await raw.set(`${prefix}known-1`, 'in/0/10', 'PX', 60_000);
    await raw.set(`${prefix}known-2`, 'in/1/20', 'PX', 60_000);
    await commands.take(raw);

    const found = await store().lookup(['unknown-1', 'known-1', 'unknown-2', 'known-2']);

    expect(found).toEqual(
      new Map([
        ['known-1', 'in/0/10'],
        ['known-2', 'in/1/20'],
      ]),
    );
    const sent = await commands.take(redis);
    expect(sent.map((c) => c[0]!.toLowerCase())).toEqual(['mget']);
    expect(sent[0]!.slice(1)).toEqual(
      ['unknown-1', 'known-1', 'unknown-2', 'known-2'].map((id) => prefix + id),
    );
  });

  it('lookup of no ids answers an empty map without asking Redis', async () => {
    expect(await store().lookup([])).toEqual(new Map());
    expect(await commands.take(redis)).toEqual([]);
  });

  it('claim keeps the first origin and answers the owner of each entry in order, with SET NX GET', async () => {
    const s = store();
    expect(
      await s.claim([
        { id: 'a', origin: 'in/0/1' },
        { id: 'b', origin: 'in/0/2' },
      ]),
    ).toEqual(['in/0/1', 'in/0/2']);

    // A later claim of a, b by other records loses to the first; the new id c is won.
    expect(
      await s.claim([
        { id: 'b', origin: 'in/1/7' },
        { id: 'c', origin: 'in/1/8' },
        { id: 'a', origin: 'in/1/9' },
      ]),
    ).toEqual(['in/0/2', 'in/1/8', 'in/0/1']);

    const sent = await commands.take(redis);
    expect(sent).toHaveLength(5);
    for (const c of sent) {
      expect(c[0]!.toLowerCase()).toBe('set');
      expect(c.slice(3).map((a) => a.toUpperCase())).toEqual(['PX', '60000', 'NX', 'GET']);
    }
    expect(await raw.mget(`${prefix}a`, `${prefix}b`, `${prefix}c`)).toEqual(['in/0/1', 'in/0/2', 'in/1/8']);
  });

  it('claim of the same id twice within one call: the first entry wins, both answer its origin', async () => {
    const owners = await store().claim([
      { id: 'twice', origin: 'in/2/100' },
      { id: 'other', origin: 'in/2/101' },
      { id: 'twice', origin: 'in/3/5' },
    ]);
    expect(owners).toEqual(['in/2/100', 'in/2/101', 'in/2/100']);
    expect(await raw.get(`${prefix}twice`)).toBe('in/2/100');
  });

  it('a claimed mark carries the TTL, and a lost claim does not extend it', async () => {
    const ttlMs = 30_000;
    await store(ttlMs).claim([{ id: 'ttl', origin: 'in/0/1' }]);
    const pttl = await raw.pttl(`${prefix}ttl`);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(ttlMs);

    // A claim by a store with a much longer TTL loses (NX) and leaves the TTL alone.
    expect(await store(3_600_000).claim([{ id: 'ttl', origin: 'in/9/9' }])).toEqual(['in/0/1']);
    const after = await raw.pttl(`${prefix}ttl`);
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(pttl);
  });

  it('a lookup after a claim sees the claimed origins', async () => {
    const s = store();
    await s.claim([
      { id: 'seen-1', origin: 'in/4/40' },
      { id: 'seen-2', origin: 'in/4/41' },
    ]);
    expect(await s.lookup(['seen-2', 'never', 'seen-1'])).toEqual(
      new Map([
        ['seen-2', 'in/4/41'],
        ['seen-1', 'in/4/40'],
      ]),
    );
  });
});

describe('RedisProcessedStore when Redis is away', () => {
  const prefix = `${uniqueName('rxingest-test-processed')}:`;

  it('with nothing listening, lookup answers "nothing known" at once and claim rejects at once', async () => {
    const port = await closedPort();
    const redis = new Redis({ host: '127.0.0.1', port, ...workerOptions });
    const errors: Error[] = [];
    redis.on('error', (e: Error) => errors.push(e));
    try {
      // Let the client see the refused connection, so it is really offline (reconnecting).
      await waitFor('a refused connection', () => errors.length > 0, { timeoutMs: 5000, intervalMs: 10 });
      const { log, lines } = captureLog();
      const store = new RedisProcessedStore(redis, { keyPrefix: prefix, ttlMs: 60_000 }, log);

      let t = Date.now();
      expect(await store.lookup(['a', 'b'])).toEqual(new Map());
      expect(Date.now() - t).toBeLessThan(2000);
      expect(lines.some((l) => l.level === 40 && /Redis lookup failed/.test(l.msg))).toBe(true);

      t = Date.now();
      await expect(store.claim([{ id: 'a', origin: 'in/0/1' }])).rejects.toThrow();
      expect(Date.now() - t).toBeLessThan(2000);
    } finally {
      redis.disconnect();
    }
  });

  it('when Redis stops answering on an open connection, lookup and claim give up within the command timeout', async () => {
    const target = new URL(stackEnv.redisUrl);
    const proxy = await freezableProxy(target);
    const redis = new Redis({ host: '127.0.0.1', port: proxy.port, ...workerOptions });
    redis.on('error', () => undefined);
    const raw = new Redis(stackEnv.redisUrl);
    try {
      await once(redis, 'ready');
      const store = new RedisProcessedStore(redis, { keyPrefix: prefix, ttlMs: 60_000 }, captureLog().log);
      // Through the proxy it works, against the real server.
      expect(await store.claim([{ id: 'x', origin: 'in/0/1' }])).toEqual(['in/0/1']);
      expect(await store.lookup(['x'])).toEqual(new Map([['x', 'in/0/1']]));

      proxy.freeze();
      let t = Date.now();
      expect(await store.lookup(['x'])).toEqual(new Map());
      expect(Date.now() - t).toBeLessThan(2000);

      t = Date.now();
      await expect(store.claim([{ id: 'y', origin: 'in/0/2' }])).rejects.toThrow(/timed out/i);
      expect(Date.now() - t).toBeLessThan(2000);
    } finally {
      redis.disconnect();
      await proxy.close();
      await deleteKeys(raw, prefix);
      raw.disconnect();
    }
  });
});
