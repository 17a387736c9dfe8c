import { defer, throwError, VirtualTimeScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { retryWithPolicy } from '../../../src/operators/retry-with-policy.js';
import { createRetryPolicy } from '../../../src/retry/retry-policy.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

class Transient extends Error {}
class Fatal extends Error {}
const transient = new Transient('503');
const isTransient = (err: unknown) => err instanceof Transient;

/** A policy without jitter unless asked: delays baseMs, 2 × baseMs, … capped at maxMs. */
const policy = (
  baseMs: number,
  maxMs: number,
  random = () => 1,
  retryable: (err: unknown) => boolean = isTransient,
) => createRetryPolicy({ baseMs, maxMs, random, retryable });

describe('retryWithPolicy', () => {
  it('behaves as its marble diagram: retries at +100, +200, then +300 (capped), then gives up', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('--#', undefined, transient);
      const out = source.pipe(
        retryWithPolicy(
          policy(
            100,
            300,
            () => 1,
            () => true,
          ),
          { maxRetries: 3 },
        ),
      );
      expectObservable(out).toBe('608ms #', undefined, transient);
      expectSubscriptions(source.subscriptions).toBe(['^-!', '102ms ^-!', '304ms ^-!', '606ms ^-!']);
    });
  });

  it('waits +100, +200, +400 before the first three retries (base 100, random = 1)', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('#', undefined, transient);
      const out = source.pipe(retryWithPolicy(policy(100, 10_000), { maxRetries: 3 }));
      expectObservable(out).toBe('700ms #', undefined, transient);
      expectSubscriptions(source.subscriptions).toBe(['(^!)', '100ms (^!)', '300ms (^!)', '700ms (^!)']);
    });
  });

  it('scales every delay by the policy’s jitter (random = 0.5 halves them)', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('#', undefined, transient);
      const out = source.pipe(
        retryWithPolicy(
          policy(100, 300, () => 0.5),
          { maxRetries: 4 },
        ),
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
      // Fails at 1, retried at 11; fails at 12, retried at 32; a at 33, complete at 34.
      expectObservable(source.pipe(retryWithPolicy(policy(10, 1000)))).toBe('33ms a|');
      expectSubscriptions(failing.subscriptions).toBe(['^!', '11ms ^!']);
      expectSubscriptions(ok.subscriptions).toBe('32ms ^-!');
    });
  });

  it('retries for as long as the error stays retryable when maxRetries is not given', () => {
    testScheduler().run(({ expectObservable }) => {
      let subscriptions = 0;
      const source = defer(() => (++subscriptions <= 50 ? throwError(() => transient) : ['done']));
      // 10, 20, 40, 80, then 100 each: 150 + 46 × 100 = 4750.
      expectObservable(source.pipe(retryWithPolicy(policy(10, 100)))).toBe('4750ms (d|)', { d: 'done' });
    });
  });

  it('passes a non-retryable error through at once, without retry or onRetry', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const fatal = new Fatal('400');
      const onRetry = (): void => {
        throw new Error('onRetry must not be called');
      };
      const source = cold('-a-#', undefined, fatal);
      const out = source.pipe(retryWithPolicy(policy(100, 1000), { maxRetries: 5, onRetry }));
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
      // Retried at 10 and at 30, where the fatal error ends it.
      expectObservable(source.pipe(retryWithPolicy(policy(10, 1000), { maxRetries: 5 }))).toBe(
        '30ms #',
        undefined,
        fatal,
      );
    });
  });

  it('uses the policy’s classification unless the call site overrides it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // The default classification: only transient failures (here a refused connection) retry.
      const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      const bug = new TypeError('x is undefined');
      const classified = createRetryPolicy({ baseMs: 10, maxMs: 10, random: () => 1 });
      expectObservable(
        cold('#', undefined, refused).pipe(retryWithPolicy(classified, { maxRetries: 1 })),
      ).toBe('10ms #', undefined, refused);
      expectObservable(cold('#', undefined, bug).pipe(retryWithPolicy(classified, { maxRetries: 1 }))).toBe(
        '#',
        undefined,
        bug,
      );
      // Overridden: this call site retries the bug too.
      expectObservable(
        cold('#', undefined, bug).pipe(retryWithPolicy(classified, { maxRetries: 1, retryable: () => true })),
      ).toBe('10ms #', undefined, bug);
    });
  });

  it('respects maxRetries: 0 means no retry at all', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-#', undefined, transient);
      expectObservable(source.pipe(retryWithPolicy(policy(10, 1000), { maxRetries: 0 }))).toBe(
        '-#',
        undefined,
        transient,
      );
      expectSubscriptions(source.subscriptions).toBe('^!');
    });
  });

  it('calls onRetry with the error and the 1-based attempt, as each retry is scheduled', () => {
    testScheduler().run(({ cold, expectObservable, flush }) => {
      const calls: [unknown, number][] = [];
      const source = cold('#', undefined, transient);
      const out = source.pipe(
        retryWithPolicy(policy(100, 300), {
          maxRetries: 4,
          onRetry: (err, attempt) => calls.push([err, attempt]),
        }),
      );
      expectObservable(out).toBe('900ms #', undefined, transient);
      flush();
      expect(calls).toEqual([
        [transient, 1],
        [transient, 2],
        [transient, 3],
        [transient, 4],
      ]);
    });
  });

  it('replays the values the source emits before each error', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a#', undefined, transient);
      // a at 0, error at 1, retry at 6: a, error at 7, retry at 17: a, error at 18.
      expectObservable(source.pipe(retryWithPolicy(policy(5, 100), { maxRetries: 2 }))).toBe(
        'a 5ms a 10ms a#',
        undefined,
        transient,
      );
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
      .pipe(retryWithPolicy(policy(100, 1000), { scheduler }))
      .subscribe({ error: () => undefined });
    expect(scheduler.actions).toHaveLength(1);
    expect(scheduler.actions[0]?.delay).toBe(100);

    sub.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
    scheduler.flush();
    expect(subscriptions).toBe(1);
  });

  it('rejects a bad maxRetries', () => {
    const p = policy(100, 1000);
    expect(() => retryWithPolicy(p, { maxRetries: -1 })).toThrow(RangeError);
    expect(() => retryWithPolicy(p, { maxRetries: 1.5 })).toThrow(RangeError);
    expect(() => retryWithPolicy(p, { maxRetries: Number.NaN })).toThrow(RangeError);
    expect(() => retryWithPolicy(p, { maxRetries: Number.POSITIVE_INFINITY })).not.toThrow();
  });
});
