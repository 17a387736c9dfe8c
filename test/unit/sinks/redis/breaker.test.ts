import { describe, expect, it } from 'vitest';
import { type BreakerChange, CircuitBreaker } from '../../../../src/pushback/admission/circuit-breaker.js';
import { BreakerCallGate } from '../../../../src/pushback/admission/request-gate.js';
import { RedisKnownCopies, redisFailureReason } from '../../../../src/sinks/redis/known-copies.js';
import { fakeRedis } from '../../../support/fakes/fake-redis.js';
import { ManualClock } from '../../../support/fakes/manual-clock.js';
import { capturedLog } from '../../../support/logs/captured-log.js';

const event = (id: string) => ({ id, ts: '2026-11-30T12:00:00.000Z' });

/** The owner marks over a fake Redis, behind the worker's Redis breaker (on a manual clock). */
function marks() {
  const clock = new ManualClock();
  const fake = fakeRedis();
  const changes: BreakerChange[] = [];
  const breaker = new CircuitBreaker(
    {
      windowMs: 10_000,
      minRequests: 3,
      failureRate: 0.9, // so that only three failures in a row open it (two successes came first)
      slowCallMs: 0,
      openMs: 1_000,
      openMaxMs: 4_000,
      probes: 1,
      silenceMs: 0,
      livenessTimeoutMs: 3_000,
    },
    { clock, onStateChange: (c) => changes.push(c) },
  );
  const fallbacks: string[] = [];
  const healthFailures: unknown[] = [];
  const { log } = capturedLog();
  const known = new RedisKnownCopies(
    fake.redis,
    { keyPrefix: 'own:', group: 'g', ttlMs: 60_000, eventsIndex: 'events' },
    {
      epochs: { of: async () => 'uuid-1' },
      health: { failed: (err) => healthFailures.push(err) },
      gate: new BreakerCallGate(breaker),
      observer: { fallback: (op, reason) => fallbacks.push(`${op}:${reason}`) },
      log,
    },
  );
  return { clock, fake, breaker, changes, fallbacks, healthFailures, known };
}

describe('the Redis circuit breaker around the owner marks', () => {
  it('opens after repeated failures, then calls nothing (unknown at once), probes after the cool-down and closes on success', async () => {
    const m = marks();
    await m.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
    expect((await m.known.owners([event('a')])).get('a')).toBe('in/0/1');

    m.fake.state.mode = 'timeout';
    const callsBefore = m.fake.state.calls;
    for (let i = 0; i < 3; i++) expect(await m.known.owners([event('a')])).toEqual(new Map());
    expect(m.breaker.state).toBe('open');
    expect(m.fake.state.calls - callsBefore, 'calls that reached Redis').toBe(3);
    expect(m.healthFailures).toHaveLength(3);

    // Open: nothing reaches Redis, every answer is "unknown", counted as breaker-open.
    for (let i = 0; i < 10; i++) expect(await m.known.owners([event('a')])).toEqual(new Map());
    await m.known.remember([{ event: event('b'), owner: 'in/0/2' }]);
    expect(m.fake.state.calls - callsBefore).toBe(3);
    expect(m.fallbacks).toEqual([
      ...Array(3).fill('lookup:timeout'),
      ...Array(10).fill('lookup:breaker-open'),
      'mark:breaker-open',
    ]);

    // Half-open after openMs: one probe goes out; it fails, so open again for twice as long.
    await m.clock.advance(1_000);
    expect(m.breaker.state).toBe('half-open');
    expect(await m.known.owners([event('a')])).toEqual(new Map());
    expect(m.breaker.state).toBe('open');
    expect(m.changes.at(-1)?.openForMs).toBe(2_000);

    // Redis is back: the next probe succeeds and closes it; the mark from before is read.
    m.fake.state.mode = 'up';
    await m.clock.advance(2_000);
    expect((await m.known.owners([event('a')])).get('a')).toBe('in/0/1');
    expect(m.breaker.state).toBe('closed');
    expect(m.changes.map((c) => c.to)).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
  });

  it('a closed connection counts like a timeout; a refusal (OOM) is an answer and never opens it', async () => {
    const m = marks();
    m.fake.state.mode = 'refusing';
    for (let i = 0; i < 10; i++) await m.known.remember([{ event: event(`r${i}`), owner: 'in/0/1' }]);
    expect(m.breaker.state).toBe('closed');
    expect(m.fallbacks).toEqual(Array(10).fill('mark:refused'));
    expect(m.healthFailures).toEqual([]);

    m.fake.state.mode = 'closed';
    for (let i = 0; i < 3; i++) await m.known.remember([{ event: event(`c${i}`), owner: 'in/0/1' }]);
    expect(m.breaker.state).toBe('open');
    expect(m.fallbacks.slice(10)).toEqual(Array(3).fill('mark:connection'));
  });

  it('a lookup script that timed out is a failure', async () => {
    const m = marks();
    m.fake.state.mode = 'timeout';
    for (let i = 0; i < 3; i++) expect(await m.known.owners([event(`t${i}`)])).toEqual(new Map());
    expect(m.breaker.state).toBe('open');
    expect(m.fallbacks).toEqual(Array(3).fill('lookup:timeout'));
    expect(m.healthFailures).toHaveLength(3);
  });

  it('a pipeline whose commands timed out is a failure, though exec() resolved (as ioredis answers a frozen Redis)', async () => {
    const m = marks();
    m.fake.state.mode = 'timeout';
    for (let i = 0; i < 3; i++) await m.known.remember([{ event: event(`t${i}`), owner: 'in/0/1' }]);
    expect(m.breaker.state).toBe('open');
    expect(m.fallbacks).toEqual(Array(3).fill('mark:timeout'));
    expect(m.healthFailures).toHaveLength(3);
  });

  it('the lookups of a user not allowed scripts (a pipeline) fail the same way', async () => {
    const m = marks();
    m.fake.state.scripts = false;
    await m.known.remember([{ event: event('a'), owner: 'in/0/1' }]);
    expect((await m.known.owners([event('a')])).get('a')).toBe('in/0/1');
    m.fake.state.mode = 'timeout';
    for (let i = 0; i < 3; i++) expect(await m.known.owners([event('a')])).toEqual(new Map());
    expect(m.breaker.state).toBe('open');
    expect(m.fallbacks).toEqual(Array(3).fill('lookup:timeout'));
  });

  it('names failures by their cause', () => {
    expect(redisFailureReason(new Error('Command timed out'))).toBe('timeout');
    expect(redisFailureReason(new Error('Connection is closed.'))).toBe('connection');
    expect(redisFailureReason(Object.assign(new Error('READONLY'), { name: 'ReplyError' }))).toBe('refused');
  });

  it('a disposed breaker (the worker stopping) lets nothing through instead of throwing', () => {
    const breaker = new CircuitBreaker();
    breaker.dispose();
    expect(new BreakerCallGate(breaker).tryPass()).toBeUndefined();
  });
});
