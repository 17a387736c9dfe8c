import { defer, throwError, VirtualTimeScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { backoffDelay, retryWithBackoff } from '../../../src/operators/backoff.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

class Transient extends Error {}
class Fatal extends Error {}
const transient = new Transient('503');
const isTransient = (err: unknown) => err instanceof Transient;

describe('backoffDelay', () => {
  it('doubles from baseMs and caps at maxMs (random = 1)', () => {
    const opts = { baseMs: 100, maxMs: 1000, random: () => 1 };
    expect([0, 1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, opts))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ]);
  });

  it('scales the capped delay by random() (full jitter)', () => {
    expect(backoffDelay(2, { baseMs: 100, maxMs: 1000, random: () => 0.5 })).toBe(200);
    expect(backoffDelay(5, { baseMs: 100, maxMs: 1000, random: () => 0.25 })).toBe(250);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 1000, random: () => 0 })).toBe(0);
  });

  it('stays at the cap for attempts where 2 ** attempt overflows', () => {
    expect(backoffDelay(5000, { baseMs: 100, maxMs: 30_000, random: () => 1 })).toBe(30_000);
  });

  it('rejects a bad attempt, schedule or random()', () => {
    const ok = { baseMs: 100, maxMs: 1000, random: () => 1 };
    expect(() => backoffDelay(-1, ok)).toThrow(RangeError);
    expect(() => backoffDelay(1.5, ok)).toThrow(RangeError);
    expect(() => backoffDelay(0, { ...ok, baseMs: 0 })).toThrow(RangeError);
    expect(() => backoffDelay(0, { ...ok, maxMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => backoffDelay(0, { ...ok, random: () => 1.5 })).toThrow(RangeError);
    expect(() => backoffDelay(0, { ...ok, random: () => Number.NaN })).toThrow(RangeError);
  });
});

describe('retryWithBackoff', () => {
  it('behaves as its marble diagram: retries at +100, +200, then +300 (capped), then gives up', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('--#', undefined, transient);
      const result = '     608ms #';
      const subs = ['^-!', '102ms ^-!', '304ms ^-!', '606ms ^-!'];
      const out = source.pipe(
        retryWithBackoff({
          baseMs: 100,
          maxMs: 300,
          maxAttempts: 3,
          isRetryable: () => true,
          random: () => 1,
        }),
      );
      expectObservable(out).toBe(result, undefined, transient);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('waits +100, +200, +400 before the first three retries (base 100, random = 1)', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('#', undefined, transient);
      const out = source.pipe(
        retryWithBackoff({
          baseMs: 100,
          maxMs: 10_000,
          maxAttempts: 3,
          isRetryable: isTransient,
          random: () => 1,
        }),
      );
      expectObservable(out).toBe('700ms #', undefined, transient);
      expectSubscriptions(source.subscriptions).toBe(['(^!)', '100ms (^!)', '300ms (^!)', '700ms (^!)']);
    });
  });

  it('halves every delay with random = 0.5', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('#', undefined, transient);
      const out = source.pipe(
        retryWithBackoff({
          baseMs: 100,
          maxMs: 300,
          maxAttempts: 4,
          isRetryable: isTransient,
          random: () => 0.5,
        }),
      );
      // 50, 100, then min(300, 400) / 2 = 150 twice.
      expectObservable(out).toBe('450ms #', undefined, transient);
      expectSubscriptions(source.subscriptions).toBe([
        '(^!)',
        '50ms (^!)',
        '150ms (^!)',
        '300ms (^!)',
        '450ms (^!)',
      ]);
    });
  });

  it('lets a value through and completes once a retry succeeds', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('-#', undefined, transient);
      const ok = cold('-a|');
      let subscriptions = 0;
      const source = defer(() => (++subscriptions <= 2 ? failing : ok));
      const out = source.pipe(
        retryWithBackoff({ baseMs: 10, maxMs: 1000, isRetryable: isTransient, random: () => 1 }),
      );
      // Fails at 1, retried at 11; fails at 12, retried at 32; a at 33, complete at 34.
      expectObservable(out).toBe('33ms a|');
      expectSubscriptions(failing.subscriptions).toBe(['^!', '11ms ^!']);
      expectSubscriptions(ok.subscriptions).toBe('32ms ^-!');
    });
  });

  it('passes a non-retryable error through at once, without retry or onRetry', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const fatal = new Fatal('400');
      const onRetry = (): void => {
        throw new Error('onRetry must not be called');
      };
      const source = cold('-a-#', undefined, fatal);
      const out = source.pipe(
        // maxAttempts only keeps a broken isRetryable from retrying forever.
        retryWithBackoff({ baseMs: 100, maxMs: 1000, maxAttempts: 5, isRetryable: isTransient, onRetry }),
      );
      expectObservable(out).toBe('-a-#', undefined, fatal);
      expectSubscriptions(source.subscriptions).toBe('^--!');
    });
  });

  it('stops at a non-retryable error that follows retryable ones', () => {
    testScheduler().run(({ expectObservable }) => {
      const fatal = new Fatal('400');
      const errors = [transient, transient, fatal];
      let subscriptions = 0;
      const source = defer(() => throwError(() => errors[subscriptions++]));
      const out = source.pipe(
        retryWithBackoff({
          baseMs: 10,
          maxMs: 1000,
          maxAttempts: 5,
          isRetryable: isTransient,
          random: () => 1,
        }),
      );
      // Retried at 10 and at 30, where the fatal error ends it.
      expectObservable(out).toBe('30ms #', undefined, fatal);
    });
  });

  it('respects maxAttempts: 0 means no retry at all', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-#', undefined, transient);
      const out = source.pipe(
        retryWithBackoff({ baseMs: 10, maxMs: 1000, maxAttempts: 0, isRetryable: isTransient }),
      );
      expectObservable(out).toBe('-#', undefined, transient);
      expectSubscriptions(source.subscriptions).toBe('^!');
    });
  });

  it('calls onRetry with the error, the 1-based attempt and the delay', () => {
    testScheduler().run(({ cold, expectObservable, flush }) => {
      const calls: [unknown, number, number][] = [];
      const source = cold('#', undefined, transient);
      const out = source.pipe(
        retryWithBackoff({
          baseMs: 100,
          maxMs: 300,
          maxAttempts: 4,
          isRetryable: isTransient,
          random: () => 1,
          onRetry: (err, attempt, delayMs) => calls.push([err, attempt, delayMs]),
        }),
      );
      expectObservable(out).toBe('900ms #', undefined, transient);
      flush();
      expect(calls).toEqual([
        [transient, 1, 100],
        [transient, 2, 200],
        [transient, 3, 300],
        [transient, 4, 300],
      ]);
    });
  });

  it('replays the values the source emits before each error', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a#', undefined, transient);
      const out = source.pipe(
        retryWithBackoff({
          baseMs: 5,
          maxMs: 100,
          maxAttempts: 2,
          isRetryable: isTransient,
          random: () => 1,
        }),
      );
      // a at 0, error at 1, retry at 6: a, error at 7, retry at 17: a, error at 18.
      expectObservable(out).toBe('a 5ms a 10ms a#', undefined, transient);
    });
  });

  it('cancels a pending retry on unsubscribe', () => {
    const scheduler = new VirtualTimeScheduler();
    let subscriptions = 0;
    const source = defer(() => {
      subscriptions++;
      return throwError(() => transient);
    });
    const sub = source
      .pipe(
        retryWithBackoff({ baseMs: 100, maxMs: 1000, isRetryable: isTransient, random: () => 1, scheduler }),
      )
      .subscribe({ error: () => undefined });
    expect(scheduler.actions).toHaveLength(1);
    expect(scheduler.actions[0]?.delay).toBe(100);

    sub.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
    scheduler.flush();
    expect(subscriptions).toBe(1);
  });

  it('rejects a bad schedule or maxAttempts', () => {
    const ok = { baseMs: 100, maxMs: 1000, isRetryable: () => true };
    expect(() => retryWithBackoff({ ...ok, baseMs: -1 })).toThrow(RangeError);
    expect(() => retryWithBackoff({ ...ok, maxMs: Number.NaN })).toThrow(RangeError);
    expect(() => retryWithBackoff({ ...ok, maxAttempts: -1 })).toThrow(RangeError);
    expect(() => retryWithBackoff({ ...ok, maxAttempts: 1.5 })).toThrow(RangeError);
    expect(() => retryWithBackoff({ ...ok, maxAttempts: Number.POSITIVE_INFINITY })).not.toThrow();
  });
});
