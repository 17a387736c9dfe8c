import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../../src/pushback/admission/circuit-breaker.js';
import { BreakerCallGate } from '../../../../src/pushback/admission/request-gate.js';
import { RedisKnownCopies } from '../../../../src/sinks/redis/known-copies.js';
import { fakeRedis } from '../../../support/fakes/fake-redis.js';
import { capturedLog } from '../../../support/logs/captured-log.js';

const TTL = 60_000;
const event = (id: string) => ({ id, ts: '2026-11-30T12:00:00.000Z' });

/** Owner marks over a fake Redis, on a wall clock the test moves. */
function marks() {
  const fake = fakeRedis();
  const wall = { now: 10 * TTL + 5 };
  const known = new RedisKnownCopies(
    fake.redis,
    { keyPrefix: 'own:', group: 'g:1', ttlMs: TTL, eventsIndex: 'events' },
    {
      epochs: { of: async () => 'uuid-1' },
      health: { failed: () => {} },
      gate: new BreakerCallGate(new CircuitBreaker()),
      log: capturedLog().log,
      wallClock: () => wall.now,
    },
  );
  return { fake, wall, known };
}

describe('RedisKnownCopies: one hash of marks per generation of PROCESSED_TTL_MS', () => {
  it('writes a batch into the current generation’s hash, named by the encoded group, field = id', async () => {
    const m = marks();
    await m.known.remember([
      { event: event('a'), owner: 'in/0/1' },
      { event: event('b'), owner: 'in/1/7' },
    ]);
    expect([...m.fake.hashes.keys()]).toEqual(['own:g%3A1#10']);
    expect(Object.fromEntries(m.fake.hashes.get('own:g%3A1#10')!)).toEqual({
      a: 'uuid-1|in/0/1',
      b: 'uuid-1|in/1/7',
    });
  });

  it('finds a mark for the rest of its generation and all of the next, not after', async () => {
    const m = marks();
    await m.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
    m.wall.now = 11 * TTL - 1;
    expect((await m.known.owners([event('a')])).get('a')).toBe('in/0/1');
    m.wall.now = 11 * TTL; // the next generation: still read, as the previous one
    expect((await m.known.owners([event('a'), event('z')])).get('a')).toBe('in/0/1');
    m.wall.now = 12 * TTL - 1;
    expect((await m.known.owners([event('a')])).get('a')).toBe('in/0/1');
    m.wall.now = 12 * TTL;
    expect(await m.known.owners([event('a')])).toEqual(new Map());
  });

  it('a newer mark in the current generation wins over the previous one', async () => {
    const m = marks();
    await m.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
    m.wall.now = 11 * TTL;
    await m.known.remember([{ event: event('a'), owner: 'in/0/9' }]);
    expect((await m.known.owners([event('a')])).get('a')).toBe('in/0/9');
  });

  it('unlinks the generation no reader needs any more once it writes in a new one', async () => {
    const m = marks();
    await m.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
    m.wall.now = 11 * TTL;
    await m.known.remember([{ event: event('b'), owner: 'in/0/2' }]);
    expect([...m.fake.hashes.keys()].sort()).toEqual(['own:g%3A1#10', 'own:g%3A1#11']);
    m.wall.now = 12 * TTL;
    await m.known.remember([{ event: event('c'), owner: 'in/0/3' }]);
    expect([...m.fake.hashes.keys()].sort()).toEqual(['own:g%3A1#11', 'own:g%3A1#12']);
  });

  it('looks up with a pipeline where scripts are refused, and finds the same marks', async () => {
    const m = marks();
    m.fake.state.scripts = false;
    await m.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
    m.wall.now = 11 * TTL;
    expect(await m.known.owners([event('a'), event('b')])).toEqual(new Map([['a', 'in/0/1']]));
  });
});
