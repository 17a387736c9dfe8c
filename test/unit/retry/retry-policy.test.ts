import { describe, expect, it } from 'vitest';
import { createRetryPolicy, retrying } from '../../../src/retry/retry-policy.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

describe('createRetryPolicy: delay', () => {
  it('doubles from baseMs and caps at maxMs (random = 1)', () => {
    const p = createRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 1 });
    expect([0, 1, 2, 3, 4, 5, 10].map((n) => p.delay(n))).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it('scales the capped delay by random() (full jitter)', () => {
    expect(createRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 0.5 }).delay(2)).toBe(200);
    expect(createRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 0.25 }).delay(5)).toBe(250);
    expect(createRetryPolicy({ baseMs: 100, maxMs: 1000, random: () => 0 }).delay(3)).toBe(0);
  });

  it('draws a new jitter for every delay, within [0, cap]', () => {
    const p = createRetryPolicy({ baseMs: 100, maxMs: 1000 });
    const draws = Array.from({ length: 200 }, () => p.delay(3));
    expect(draws.every((d) => d >= 0 && d <= 800)).toBe(true);
    expect(new Set(draws).size).toBeGreaterThan(100);
  });

  it('stays at the cap for attempts where 2 ** attempt overflows', () => {
    expect(createRetryPolicy({ baseMs: 100, maxMs: 30_000, random: () => 1 }).delay(5000)).toBe(30_000);
  });

  it('rejects a bad attempt, schedule or random()', () => {
    const ok = { baseMs: 100, maxMs: 1000, random: () => 1 };
    const p = createRetryPolicy(ok);
    expect(() => p.delay(-1)).toThrow(RangeError);
    expect(() => p.delay(1.5)).toThrow(RangeError);
    expect(() => createRetryPolicy({ ...ok, baseMs: 0 })).toThrow(RangeError);
    expect(() => createRetryPolicy({ ...ok, maxMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => createRetryPolicy({ ...ok, random: () => 1.5 }).delay(0)).toThrow(RangeError);
    expect(() => createRetryPolicy({ ...ok, random: () => Number.NaN }).delay(0)).toThrow(RangeError);
  });
});

describe('createRetryPolicy: classification', () => {
  it('retries only transient failures by default (model/failures.ts)', () => {
    const p = createRetryPolicy({ baseMs: 1, maxMs: 1 });
    expect(p.retryable(refused())).toBe(true);
    expect(p.retryable(new TypeError('x is undefined'))).toBe(false);
    expect(p.retryable(Object.assign(new Error('bad'), { badData: true }))).toBe(false);
  });

  it('takes another classification when given one', () => {
    const p = createRetryPolicy({ baseMs: 1, maxMs: 1, retryable: () => true });
    expect(p.retryable(new TypeError('x'))).toBe(true);
  });
});

describe('createRetryPolicy: wait', () => {
  it('ends at once, rejecting with the signal’s reason (as its doc says), when it aborts during a long wait', async () => {
    const p = createRetryPolicy({ baseMs: 60_000, maxMs: 60_000, random: () => 1 });
    const ac = new AbortController();
    const waiting = p.wait(0, ac.signal);
    const reason = new Error('shutting down');
    ac.abort(reason);
    await expect(waiting).rejects.toBe(reason);
  });

  it('does not start waiting when the signal has aborted already', async () => {
    const p = createRetryPolicy({ baseMs: 60_000, maxMs: 60_000, random: () => 1 });
    const reason = new Error('gone');
    await expect(p.wait(0, AbortSignal.abort(reason))).rejects.toBe(reason);
  });
});

describe('retrying', () => {
  // random = 0: every wait is 0 ms, so these tests take no time.
  const quick = createRetryPolicy({ baseMs: 10, maxMs: 100, random: () => 0 });

  it('runs the work until it succeeds, passing the attempt number, and calls onRetry before each wait', async () => {
    const attempts: number[] = [];
    const retries: number[] = [];
    const value = await retrying(
      quick,
      async (attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw refused();
        return 'ok';
      },
      { onRetry: (_, attempt) => retries.push(attempt) },
    );
    expect(value).toBe('ok');
    expect(attempts).toEqual([0, 1, 2, 3]);
    expect(retries).toEqual([1, 2, 3]);
  });

  it('passes a non-retryable error through at once', async () => {
    let calls = 0;
    const bug = new TypeError('x is undefined');
    await expect(
      retrying(quick, async () => {
        calls++;
        throw bug;
      }),
    ).rejects.toBe(bug);
    expect(calls).toBe(1);
  });

  it('gives up after maxRetries with the last error', async () => {
    let calls = 0;
    const err = refused();
    await expect(
      retrying(
        quick,
        async () => {
          calls++;
          throw err;
        },
        { maxRetries: 2 },
      ),
    ).rejects.toBe(err);
    expect(calls).toBe(3);
  });

  it('stops retrying when the signal aborts, with the signal’s reason', async () => {
    const slow = createRetryPolicy({ baseMs: 60_000, maxMs: 60_000, random: () => 1 });
    const ac = new AbortController();
    const reason = new Error('partition revoked');
    let calls = 0;
    const run = retrying(
      slow,
      async () => {
        calls++;
        throw refused();
      },
      { signal: ac.signal, onRetry: () => queueMicrotask(() => ac.abort(reason)) },
    );
    // (Which error it rejects with is the wait's business, tested above.)
    await expect(run).rejects.toBeDefined();
    expect(ac.signal.aborted).toBe(true);
    expect(calls).toBe(1);
  });

  it('uses the call site’s classification over the policy’s', async () => {
    let calls = 0;
    const value = await retrying(
      quick,
      async () => {
        if (++calls < 3) throw new TypeError('flaky');
        return calls;
      },
      { retryable: () => true },
    );
    expect(value).toBe(3);
  });
});
