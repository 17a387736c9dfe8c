import { errors as es } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrencyLimiter } from '../../../../src/pushback/admission/adaptive-concurrency.js';
import { CircuitBreaker } from '../../../../src/pushback/admission/circuit-breaker.js';
import { AdmissionGate } from '../../../../src/pushback/admission/request-gate.js';
import { bulkOutcome, errorOutcome } from '../../../../src/sinks/elasticsearch/request-outcome.js';
import { ManualClock, settle } from '../../../support/fakes/manual-clock.js';

function gate(opts: { limit?: number; slowCallMs?: number } = {}) {
  const clock = new ManualClock();
  const limits: number[] = [];
  const states: string[] = [];
  const limit = opts.limit ?? 4;
  const limiter = new AdaptiveConcurrencyLimiter(
    { initial: limit, min: 1, max: 64, decreaseRatio: 0.5, rttDeviationScale: 2.5, ewmaAlpha: 0.4 },
    { clock, onLimit: (n) => limits.push(n) },
  );
  const breaker = new CircuitBreaker(
    {
      windowMs: 10_000,
      minRequests: 3,
      failureRate: 0.5,
      slowCallMs: opts.slowCallMs ?? 0,
      openMs: 1_000,
      openMaxMs: 8_000,
      silenceMs: 0,
      livenessTimeoutMs: 3_000,
      probes: 1,
    },
    { clock, onStateChange: (c) => states.push(c.to) },
  );
  return { clock, limiter, breaker, limits, states, gate: new AdmissionGate(limiter, breaker, clock) };
}

const item = (status: number, type?: string) => ({
  create: { status, ...(type ? { error: { type } } : {}) },
});
const responseError = (statusCode: number, type?: string) =>
  new es.ResponseError({
    body: type ? { error: { type } } : {},
    statusCode,
    headers: {},
    warnings: null,
    meta: {} as never,
  });

describe('bulkOutcome: what an HTTP 200 bulk answer says', () => {
  it('is ok when every item is done, exists, or is a bad document', () => {
    expect(bulkOutcome([item(201), item(409), item(400, 'document_parsing_exception')])).toBe('ok');
  });

  it('is pushback when any item was refused for load, inside the 200', () => {
    expect(bulkOutcome([item(201), item(429, 'es_rejected_execution_exception'), item(201)])).toBe(
      'pushback',
    );
    expect(bulkOutcome([item(201), item(503, 'unavailable_shards_exception')])).toBe('pushback');
  });

  it('is failed when every item was refused for a destination fault', () => {
    expect(
      bulkOutcome([item(404, 'index_not_found_exception'), item(404, 'index_not_found_exception')]),
    ).toBe('failed');
    expect(bulkOutcome([item(403, 'security_exception')])).toBe('failed');
    expect(bulkOutcome([item(403, 'cluster_block_exception'), item(503)])).toBe('failed');
  });
});

describe('errorOutcome: what a request that threw says', () => {
  it('tells pushback, failure, abandonment and request bugs apart', () => {
    expect(errorOutcome(responseError(429))).toBe('pushback');
    expect(errorOutcome(responseError(502))).toBe('failed');
    expect(errorOutcome(responseError(403))).toBe('failed');
    expect(errorOutcome(responseError(404, 'index_not_found_exception'))).toBe('failed');
    expect(errorOutcome(responseError(400, 'parse_exception'))).toBe('ok');
    expect(errorOutcome(new es.ConnectionError('refused'))).toBe('failed');
    expect(errorOutcome(new es.TimeoutError('slow'))).toBe('failed');
    expect(errorOutcome(new es.RequestAbortedError('aborted'))).toBe('unsent');
    expect(errorOutcome(new DOMException('aborted', 'AbortError'))).toBe('unsent');
  });
});

describe('AdmissionGate', () => {
  it('pushback inside a 200 answer lowers the limit and keeps the breaker closed', async () => {
    const { gate: g, clock, limiter, breaker } = gate({ limit: 8 });
    for (let round = 0; round < 2; round++) {
      const passes = await Promise.all(Array.from({ length: 8 }, () => g.acquire()));
      await clock.advance(20);
      for (const p of passes) p.release({ result: 'ok' });
    }
    const limitBefore = limiter.limit;
    const passes = await Promise.all(Array.from({ length: limiter.limit }, () => g.acquire()));
    await clock.advance(20);
    passes[0]!.release({ result: bulkOutcome([item(201), item(429, 'es_rejected_execution_exception')]) });
    for (const p of passes.slice(1)) p.release({ result: 'ok' });
    expect(limiter.limit).toBeLessThan(limitBefore);
    expect(breaker.state).toBe('closed');
  });

  it('failures open the breaker; then acquire waits, and a probe that succeeds lets everyone through', async () => {
    const { gate: g, clock, breaker, states } = gate();
    for (let i = 0; i < 3; i++) (await g.acquire()).release({ result: 'failed' });
    expect(breaker.state).toBe('open');
    const got: number[] = [];
    const waiting = [1, 2, 3].map((i) =>
      g.acquire().then((p) => {
        got.push(i);
        return p;
      }),
    );
    await clock.advance(999);
    expect(got).toEqual([]);
    await clock.advance(1);
    expect(got).toEqual([1]); // one probe
    (await waiting[0]!).release({ result: 'ok' });
    expect(breaker.state).toBe('closed');
    for (const w of waiting.slice(1)) (await w).release({ result: 'ok' });
    expect(got).toEqual([1, 2, 3]);
    expect(states).toEqual(['open', 'half-open', 'closed']);
  });

  it('time spent waiting out an open breaker is not counted as RTT', async () => {
    const { gate: g, clock, limiter } = gate();
    for (let i = 0; i < 3; i++) (await g.acquire()).release({ result: 'failed' });
    const probe = g.acquire();
    await clock.advance(1_000); // half-open
    const pass = await probe;
    await clock.advance(30);
    pass.release({ result: 'ok' });
    expect(limiter.rtt?.mean).toBe(30);
  });

  it("only the writes' round trips feed the limit: fast reads mixed in do not hide writes that slowed down", async () => {
    const { gate: g, clock, limiter, limits } = gate({ limit: 8 });
    const roundTrip = async (ms: number, timesWrites: boolean) => {
      const pass = await g.acquire();
      await clock.advance(ms);
      pass.release({ result: 'ok', timesWrites });
    };
    for (let i = 0; i < 8; i++) {
      await roundTrip(100 + (i % 3), true);
      await roundTrip(5, false);
    }
    expect(limiter.rtt?.mean).toBeGreaterThan(99); // the reads' 5 ms never entered the mean
    expect(limiter.rtt?.mean).toBeLessThan(103);
    await roundTrip(5, false);
    await roundTrip(2_100, true); // the cluster's writes now take 2 s
    expect(limits.at(-1)).toBeLessThan(8);
  });

  it('time spent waiting for a permit does not count toward a slow call', async () => {
    const { gate: g, clock, breaker } = gate({ limit: 1, slowCallMs: 500 });
    const first = await g.acquire();
    const second = g.acquire();
    await clock.advance(2_000); // the first hangs: one slow call; the second waits for the permit
    expect(breaker.window).toEqual({ requests: 1, failures: 1 });
    first.release({ result: 'ok' });
    const pass = await second;
    await clock.advance(400);
    pass.release({ result: 'ok' });
    expect(breaker.window).toEqual({ requests: 2, failures: 1 });
  });

  it('an aborted acquire gives back the permit and the probe slot', async () => {
    const { gate: g, clock, limiter, breaker } = gate({ limit: 2 });
    for (let i = 0; i < 3; i++) (await g.acquire()).release({ result: 'failed' });
    expect(breaker.state).toBe('open');
    const controller = new AbortController();
    const waiting = g.acquire(controller.signal);
    await settle();
    expect(limiter.inFlight).toBe(1); // holds a permit while the breaker is open
    controller.abort(new Error('revoked'));
    await expect(waiting).rejects.toThrow('revoked');
    expect(limiter.inFlight).toBe(0);
    await clock.advance(1_000);
    const probe = await g.acquire();
    probe.release({ result: 'unsent' });
    expect(breaker.state).toBe('half-open');
    expect(limiter.inFlight).toBe(0);
    (await g.acquire()).release({ result: 'ok' });
    expect(breaker.state).toBe('closed');
  });
});
