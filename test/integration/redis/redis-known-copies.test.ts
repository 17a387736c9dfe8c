import type { Client } from '@elastic/elasticsearch';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esClient, uniqueName, waitFor } from '../../../harness/stack.js';
import { CircuitBreaker, DEFAULT_CIRCUIT_BREAKER } from '../../../src/pushback/admission/circuit-breaker.js';
import { BreakerCallGate } from '../../../src/pushback/admission/request-gate.js';
import { IndexEpochs } from '../../../src/sinks/elasticsearch/index-epochs.js';
import { RedisHealth } from '../../../src/sinks/redis/health.js';
import { RedisKnownCopies } from '../../../src/sinks/redis/known-copies.js';
import { type PrivateRedis, startPrivateRedis } from '../../support/servers/private-redis.js';

/**
 * RedisKnownCopies against a real Redis (a private redis-server, so that it can be frozen,
 * stopped and flushed) and the real Elasticsearch (index epochs): what InMemoryKnownCopies
 * stands for — owners of known ids only, last owner remembered — plus what only the real one
 * has: marks scoped by pipeline and by index incarnation, a TTL, and never waiting on or
 * failing because of a Redis that is away.
 */

/** The client options the worker uses. */
const workerRedis = (url: string) =>
  new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    commandTimeout: 500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 100,
  });

const captureLog = () => {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { log, lines };
};

const event = (id: string) => ({ id, ts: '2026-11-30T12:00:00.000Z' });

describe('RedisKnownCopies', () => {
  let redis: PrivateRedis;
  let es: Client;
  const index = uniqueName('known-copies-events');

  beforeAll(async () => {
    redis = await startPrivateRedis();
    es = esClient();
    await es.indices.create({ index });
  });
  afterAll(async () => {
    await es.indices.delete({ index }, { ignore: [404] });
    await es.close();
    await redis.dispose();
  });

  function store(group: string, url = redis.url) {
    const client = workerRedis(url);
    const { log, lines } = captureLog();
    const states: boolean[] = [];
    const health = new RedisHealth(client, { probeEveryMs: 100, onChange: (up) => states.push(up) }, log);
    health.start();
    // The worker's Redis breaker, with quick settings: open after two failures in a row.
    const breakerChanges: string[] = [];
    const breaker = new CircuitBreaker(
      {
        ...DEFAULT_CIRCUIT_BREAKER,
        minRequests: 2,
        failureRate: 1, // only failures in a row open it (a success came first)
        slowCallMs: 0,
        openMs: 300,
        openMaxMs: 600,
        probes: 1,
      },
      { onStateChange: (c) => breakerChanges.push(c.to) },
    );
    const fallbacks: string[] = [];
    const observer = { fallback: (op: string, reason: string) => fallbacks.push(`${op}:${reason}`) };
    const known = new RedisKnownCopies(
      client,
      { keyPrefix: 'rxingest:owner:', group, ttlMs: 60_000, eventsIndex: index },
      { epochs: new IndexEpochs(es, 0), health, gate: new BreakerCallGate(breaker), observer, log },
    );
    return {
      client,
      health,
      known,
      lines,
      states,
      breakerChanges,
      fallbacks,
      close: () => {
        breaker.dispose();
        health.stop();
        client.disconnect();
      },
    };
  }

  /** A Redis ACL user that may do everything but run scripts, and a URL that logs in as it. */
  async function userWithoutScripts(raw: Redis, name: string, password: string) {
    const user = uniqueName(name);
    await raw.acl('SETUSER', user, 'on', `>${password}`, '~*', '+@all', '-@scripting');
    const url = new URL(redis.url);
    url.username = user;
    url.password = password;
    return { user, url: url.toString() };
  }

  it('answers the owners it was told, and nothing for ids it does not know', async () => {
    const s = store('g1');
    try {
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 5_000 });
      await s.known.remember([
        { event: event('a'), owner: 'in/0/1' },
        { event: event('b'), owner: 'in/1/7' },
      ]);
      expect(await s.known.owners([event('a'), event('b'), event('c')])).toEqual(
        new Map([
          ['a', 'in/0/1'],
          ['b', 'in/1/7'],
        ]),
      );
      // One hash per generation of the TTL: read for one to two TTLs, expiring a minute after.
      const raw = new Redis(redis.url);
      const key = s.known.generationKey(Math.floor(Date.now() / 60_000));
      const ttl = await raw.pttl(key);
      const mark = await raw.hget(key, 'a');
      raw.disconnect();
      expect(mark).toMatch(/^[^|]+\|in\/0\/1$/);
      expect(ttl).toBeGreaterThan(60_000);
      expect(ttl).toBeLessThanOrEqual(180_000);
    } finally {
      s.close();
    }
  });

  it('writes a batch of marks with one HSET, looks a batch up with one script, and loads the script again after SCRIPT FLUSH', async () => {
    const s = store('scripted');
    const raw = new Redis(redis.url);
    try {
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 5_000 });
      const monitor = await raw.monitor();
      const sent: string[] = [];
      // MONITOR shows what clients send; a script's own calls come from source "lua".
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source !== 'lua') sent.push(String(args[0]).toLowerCase());
      });
      const batch = Array.from({ length: 200 }, (_, i) => ({ event: event(`s${i}`), owner: `in/0/${i}` }));
      await s.known.remember(batch);
      expect((await s.known.owners(batch.map((b) => b.event))).size).toBe(200);
      await waitFor('the script seen', () => sent.some((c) => c === 'evalsha' || c === 'eval'), {
        timeoutMs: 5_000,
      });
      monitor.disconnect();
      // One HSET (with its PEXPIREAT), one script run (EVALSHA, and EVAL the first time after NOSCRIPT): nothing per mark.
      expect(sent.filter((c) => c === 'hset')).toHaveLength(1);
      expect(sent.filter((c) => c === 'set' || c === 'get' || c === 'mget' || c === 'hmget')).toHaveLength(0);
      expect(sent.filter((c) => c === 'evalsha' || c === 'eval').length).toBeLessThanOrEqual(2);
      const key = s.known.generationKey(Math.floor(Date.now() / 60_000));
      expect(await raw.hlen(key)).toBe(200);
      expect(await raw.pttl(key)).toBeGreaterThan(60_000);

      await raw.script('FLUSH');
      await s.known.remember([{ event: event('after-flush'), owner: 'in/0/999' }]);
      expect((await s.known.owners([event('after-flush')])).get('after-flush')).toBe('in/0/999');
    } finally {
      raw.disconnect();
      s.close();
    }
  });

  it('ids of any characters come back exactly, looked up by the script or by a pipeline', async () => {
    // Ids are any JSON string: separators, digits and colons, newlines and multi-byte
    // characters must reach the same keys whichever way the marks are written.
    const ids = [
      '12:',
      '3:abc',
      'a|b',
      'line\nbreak',
      'tab\t:',
      'é',
      '日本語のid',
      '🙂x',
      ':',
      '0',
      `${'x'.repeat(300)}é`,
    ];
    const batch = ids.map((id, i) => ({ event: event(id), owner: `in/${i}/${1000 + i}` }));
    const scripted = store('hostile-script');
    const raw = new Redis(redis.url);
    const { user, url } = await userWithoutScripts(raw, 'hostile-noscript', 'hostile-pw');
    const piped = store('hostile-pipe', url);
    try {
      await waitFor('Redis up', () => scripted.health.usable && piped.health.usable, { timeoutMs: 5_000 });
      await scripted.known.remember(batch);
      await piped.known.remember(batch);
      const expected = new Map(batch.map((b) => [b.event.id, b.owner]));
      expect(await scripted.known.owners(batch.map((b) => b.event))).toEqual(expected);
      expect(await piped.known.owners(batch.map((b) => b.event))).toEqual(expected);
      expect(piped.lines.some((l) => /does not run scripts/.test(l.msg))).toBe(true);
      const generation = Math.floor(Date.now() / 60_000);
      for (const id of ids) {
        const mark = await raw.hget(scripted.known.generationKey(generation), id);
        expect(mark).toMatch(/^[^|]+\|in\//);
        expect(mark).toBe(await raw.hget(piped.known.generationKey(generation), id));
      }
    } finally {
      scripted.close();
      piped.close();
      await raw.acl('DELUSER', user);
      raw.disconnect();
    }
  });

  it('a Redis user that may not run scripts still finds its marks (looked up by a pipeline), with one warning', async () => {
    const raw = new Redis(redis.url);
    const { user, url } = await userWithoutScripts(raw, 'noscript', 'noscript-pw');
    const s = store('noscript', url);
    try {
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 5_000 });
      await s.known.remember([{ event: event('n1'), owner: 'in/0/1' }]);
      await s.known.remember([{ event: event('n2'), owner: 'in/0/2' }]);
      expect(await s.known.owners([event('n1'), event('n2')])).toEqual(
        new Map([
          ['n1', 'in/0/1'],
          ['n2', 'in/0/2'],
        ]),
      );
      const warnings = s.lines.filter((l) => /does not run scripts/.test(l.msg));
      expect(warnings).toHaveLength(1);
      expect(JSON.stringify(s.lines)).not.toContain('noscript-pw');
    } finally {
      s.close();
      await raw.acl('DELUSER', user);
      raw.disconnect();
    }
  });

  it('keeps the marks of two pipelines (consumer groups) apart', async () => {
    const one = store('pipeline-one');
    const two = store('pipeline-two');
    try {
      await waitFor('Redis up', () => one.health.usable && two.health.usable, { timeoutMs: 5_000 });
      await one.known.remember([{ event: event('shared-id'), owner: 'one/0/1' }]);
      expect(await two.known.owners([event('shared-id')])).toEqual(new Map());
      expect(await one.known.owners([event('shared-id')])).toEqual(new Map([['shared-id', 'one/0/1']]));
    } finally {
      one.close();
      two.close();
    }
  });

  it('does not believe marks written for an index that was deleted and created again', async () => {
    const s = store('rebuild');
    try {
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 5_000 });
      await s.known.remember([{ event: event('x'), owner: 'in/0/3' }]);
      expect((await s.known.owners([event('x')])).get('x')).toBe('in/0/3');
      await es.indices.delete({ index });
      expect(await s.known.owners([event('x')])).toEqual(new Map());
      await es.indices.create({ index });
      expect(await s.known.owners([event('x')])).toEqual(new Map());
    } finally {
      s.close();
    }
  });

  it('while Redis is frozen answers "unknown" within the command timeout, stops asking once the breaker opens, says so once, and comes back', async () => {
    const s = store('frozen');
    try {
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 5_000 });
      await s.known.remember([{ event: event('f'), owner: 'in/0/9' }]);
      redis.freeze();
      // Two calls wait out the command timeout (500 ms) each: the breaker opens.
      for (let i = 0; i < 2; i++) {
        const t = Date.now();
        expect(await s.known.owners([event('f')])).toEqual(new Map());
        expect(Date.now() - t).toBeLessThan(2_000);
      }
      expect(s.breakerChanges).toEqual(['open']);
      expect(s.health.usable).toBe(false);
      // Open: later batches do not even ask (no wait at all).
      const t = Date.now();
      for (let i = 0; i < 20; i++) expect(await s.known.owners([event('f')])).toEqual(new Map());
      await s.known.remember([{ event: event('g'), owner: 'in/0/10' }]);
      expect(Date.now() - t).toBeLessThan(200);
      expect(s.fallbacks.slice(0, 2)).toEqual(['lookup:timeout', 'lookup:timeout']);
      expect(s.fallbacks.slice(2)).toEqual([...Array(20).fill('lookup:breaker-open'), 'mark:breaker-open']);
      redis.thaw();
      await waitFor('Redis up again', () => s.health.usable, { timeoutMs: 10_000 });
      // A probe after the cool-down closes the breaker; the mark from before is still there.
      await waitFor('the mark read again', async () => (await s.known.owners([event('f')])).get('f'), {
        timeoutMs: 10_000,
      });
      expect(s.breakerChanges.at(-1)).toBe('closed');
      const warnings = s.lines.filter((l) => l.level === 40 && /Redis unavailable/.test(l.msg));
      expect(warnings).toHaveLength(1);
      expect(s.states).toEqual([true, false, true]);
    } finally {
      redis.thaw();
      s.close();
    }
  });

  it('starts with Redis stopped (unknown, no failure), and uses it once it is back', async () => {
    await redis.stop();
    const s = store('down-at-start');
    try {
      expect(await s.known.owners([event('a')])).toEqual(new Map());
      await s.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
      expect(s.health.usable).toBe(false);
      // Two failed calls opened the breaker; once Redis is back, its probe closes it.
      expect(s.breakerChanges).toEqual(['open']);
      await redis.start();
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 10_000 });
      await waitFor(
        'the mark written and read',
        async () => {
          await s.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
          return (await s.known.owners([event('a')])).get('a') === 'in/0/1';
        },
        { timeoutMs: 10_000 },
      );
      expect(s.breakerChanges.at(-1)).toBe('closed');
      // Flushed: everything unknown again, nothing fails.
      await redis.flush();
      expect(await s.known.owners([event('a')])).toEqual(new Map());
      expect(s.states).toEqual([false, true]);
    } finally {
      s.close();
    }
  });

  it('goes on when Redis refuses writes (no replicas to write to): marks are lost, nothing fails', async () => {
    const s = store('refusing');
    const admin = new Redis(redis.url);
    try {
      await waitFor('Redis up', () => s.health.usable, { timeoutMs: 5_000 });
      await admin.config('SET', 'min-replicas-to-write', '1');
      await expect(s.known.remember([{ event: event('r'), owner: 'in/0/1' }])).resolves.toBeUndefined();
      expect(await s.known.owners([event('r')])).toEqual(new Map());
      expect(s.health.usable).toBe(true);
      expect(s.lines.some((l) => l.level === 40 && /refuses owner marks/.test(l.msg))).toBe(true);
    } finally {
      await admin.config('SET', 'min-replicas-to-write', '0');
      admin.disconnect();
      s.close();
    }
  });
});
