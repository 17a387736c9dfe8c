import { describe, expect, it } from 'vitest';
import type { CircuitBreakerSettings } from '../../../../src/config/control-settings.js';
import {
  type BreakerChange,
  BreakerDisposedError,
  type BreakerTicket,
  CircuitBreaker,
} from '../../../../src/pushback/admission/circuit-breaker.js';
import { ManualClock, settle } from '../../../support/fakes/manual-clock.js';

const settings = (s: Partial<CircuitBreakerSettings> = {}): CircuitBreakerSettings => ({
  windowMs: 10_000,
  minRequests: 5,
  failureRate: 0.5,
  slowCallMs: 0,
  openMs: 1_000,
  openMaxMs: 4_000,
  probes: 2,
  silenceMs: 0,
  livenessTimeoutMs: 3_000,
  ...s,
});

function breaker(s: Partial<CircuitBreakerSettings> = {}) {
  const clock = new ManualClock();
  const changes: BreakerChange[] = [];
  const b = new CircuitBreaker(settings(s), { clock, onStateChange: (c) => changes.push(c) });
  const run = (ok: boolean) => {
    const t = b.tryAdmit();
    if (!t) throw new Error(`not admitted while ${b.state}`);
    if (ok) t.success();
    else t.failure();
  };
  return { clock, changes, b, run };
}

describe('CircuitBreaker', () => {
  it('stays closed below the minimum volume, even when everything fails', () => {
    const { b, run, changes } = breaker();
    for (let i = 0; i < 4; i++) run(false);
    expect(b.state).toBe('closed');
    expect(changes).toEqual([]);
  });

  it('opens when the failure rate over the window reaches the threshold, with one change', () => {
    const { b, run, changes } = breaker();
    run(true);
    run(true);
    run(false);
    run(false);
    expect(b.state).toBe('closed'); // 2 of 4: below the volume
    run(false); // 3 of 5 = 60%
    expect(b.state).toBe('open');
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ from: 'closed', to: 'open', retryAt: 1_000, openForMs: 1_000 });
    expect(changes[0]!.reason).toMatch(/3 of 5 requests failed in the last 10 s \(60% >= 50%\)/);
    expect(b.tryAdmit()).toBeUndefined();
  });

  it('a low failure rate keeps it closed', () => {
    const { b, run } = breaker();
    for (let i = 0; i < 100; i++) run(i % 3 !== 0); // 34% fail
    expect(b.state).toBe('closed');
  });

  it('opens after minRequests failures in a row, whatever successes the window still holds', () => {
    // A destination that froze: hundreds of successes from before, then nothing but slow calls.
    const { b, run, changes } = breaker();
    for (let i = 0; i < 200; i++) run(true);
    for (let i = 0; i < 4; i++) run(false);
    run(true); // a success breaks the run
    for (let i = 0; i < 4; i++) run(false);
    expect(b.state).toBe('closed');
    run(false);
    expect(b.state).toBe('open');
    expect(changes.map((c) => c.reason)).toEqual(['5 requests in a row failed']);
  });

  it('a frozen destination opens it by slow calls alone, within slowCallMs', async () => {
    const { b, clock, changes } = breaker({ slowCallMs: 2_000 });
    const ok = () => b.tryAdmit()!.success();
    for (let i = 0; i < 50; i++) ok();
    // Five requests go out and never come back.
    for (let i = 0; i < 5; i++) b.tryAdmit();
    await clock.advance(1_999);
    expect(b.state).toBe('closed');
    await clock.advance(1);
    expect(b.state).toBe('open');
    expect(changes).toHaveLength(1);
  });

  it('forgets failures older than the window', async () => {
    const { b, run, clock } = breaker();
    for (let i = 0; i < 4; i++) run(false);
    await clock.advance(11_000);
    run(false);
    expect(b.window).toEqual({ requests: 1, failures: 1 });
    expect(b.state).toBe('closed');
  });

  it('holds requests while open, probes when half-open, closes when the probes succeed', async () => {
    const { b, run, clock, changes } = breaker();
    for (let i = 0; i < 5; i++) run(false);
    const admitted: BreakerTicket[] = [];
    const waiting = Array.from({ length: 4 }, () => b.admit().then((t) => admitted.push(t)));
    await clock.advance(999);
    expect(admitted).toHaveLength(0);
    await clock.advance(1);
    expect(b.state).toBe('half-open');
    expect(changes.at(-1)).toMatchObject({ from: 'open', to: 'half-open' });
    expect(admitted).toHaveLength(2); // the probes
    admitted[0]!.success();
    await settle();
    expect(b.state).toBe('half-open');
    expect(admitted).toHaveLength(2);
    admitted[1]!.success();
    await Promise.all(waiting);
    expect(b.state).toBe('closed');
    expect(changes.map((c) => c.to)).toEqual(['open', 'half-open', 'closed']);
    expect(admitted).toHaveLength(4);
  });

  it('opens again when a probe fails, for twice as long each time, up to the maximum', async () => {
    const { b, run, clock, changes } = breaker();
    for (let i = 0; i < 5; i++) run(false);
    const openFor: number[] = [];
    for (let round = 0; round < 4; round++) {
      const opened = changes.at(-1)!;
      expect(opened.to).toBe('open');
      openFor.push(opened.retryAt! - clock.now());
      await clock.advance(opened.retryAt! - clock.now() - 1);
      expect(b.state).toBe('open');
      await clock.advance(1);
      expect(b.state).toBe('half-open');
      b.tryAdmit()!.failure();
    }
    expect(openFor).toEqual([1_000, 2_000, 4_000, 4_000]);
    // Success resets the open period to openMs.
    await clock.advance(4_000);
    b.tryAdmit()!.success();
    b.tryAdmit()!.success();
    expect(b.state).toBe('closed');
    for (let i = 0; i < 5; i++) run(false);
    expect(changes.at(-1)!.retryAt! - clock.now()).toBe(1_000);
  });

  it('counts a request unanswered for slowCallMs as failed: a frozen destination opens it', async () => {
    const { b, clock, changes } = breaker({ slowCallMs: 3_000 });
    const hanging = Array.from({ length: 5 }, () => b.tryAdmit()!);
    await clock.advance(2_999);
    expect(b.state).toBe('closed');
    await clock.advance(1);
    expect(b.state).toBe('open');
    expect(changes).toHaveLength(1);
    // Their late answers change nothing.
    for (const t of hanging) t.success();
    expect(b.state).toBe('open');
  });

  it('a hanging probe counts as failed too', async () => {
    const { b, run, clock } = breaker({ slowCallMs: 3_000 });
    for (let i = 0; i < 5; i++) run(false);
    await clock.advance(1_000);
    expect(b.state).toBe('half-open');
    b.tryAdmit(); // never answered
    await clock.advance(3_000);
    expect(b.state).toBe('open');
  });

  it('ignores answers to requests admitted before a state change', async () => {
    const { b, run, clock } = breaker();
    const early = b.tryAdmit()!; // admitted while closed
    for (let i = 0; i < 5; i++) run(false);
    await clock.advance(1_000);
    expect(b.state).toBe('half-open');
    early.success();
    early.success();
    expect(b.state).toBe('half-open');
    expect(b.tryAdmit()).toBeDefined();
    expect(b.tryAdmit()).toBeDefined();
    expect(b.tryAdmit()).toBeUndefined();
  });

  it('a cancelled probe gives its slot to the next request', async () => {
    const { b, run, clock } = breaker({ probes: 1 });
    for (let i = 0; i < 5; i++) run(false);
    await clock.advance(1_000);
    const probe = b.tryAdmit()!;
    const next = b.admit();
    probe.cancel();
    (await next).success();
    expect(b.state).toBe('closed');
  });

  it('an aborted admit rejects with the reason', async () => {
    const { b, run } = breaker();
    for (let i = 0; i < 5; i++) run(false);
    const controller = new AbortController();
    const waiting = b.admit(controller.signal);
    controller.abort(new Error('draining'));
    await expect(waiting).rejects.toThrow('draining');
  });

  it('leaves no timer running after dispose, and rejects whoever waits', async () => {
    const { b, run, clock } = breaker({ slowCallMs: 3_000 });
    b.tryAdmit(); // a slow-call timer
    for (let i = 0; i < 5; i++) run(false); // the open timer
    const waiting = b.admit();
    expect(clock.pending).toBeGreaterThan(0);
    b.dispose();
    expect(clock.pending).toBe(0);
    await expect(waiting).rejects.toBeInstanceOf(BreakerDisposedError);
    expect(() => b.tryAdmit()).toThrow(BreakerDisposedError);
  });

  it('refuses settings it cannot work with', () => {
    expect(() => new CircuitBreaker(settings({ failureRate: 0 }))).toThrow(RangeError);
    expect(() => new CircuitBreaker(settings({ probes: 0 }))).toThrow(RangeError);
    expect(() => new CircuitBreaker(settings({ openMs: 5_000, openMaxMs: 1_000 }))).toThrow(RangeError);
  });
});
