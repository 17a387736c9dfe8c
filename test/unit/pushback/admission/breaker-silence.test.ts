import { describe, expect, it } from 'vitest';
import {
  type BreakerChange,
  type BreakerTicket,
  CircuitBreaker,
  DEFAULT_CIRCUIT_BREAKER,
} from '../../../../src/pushback/admission/circuit-breaker.js';
import { ManualClock } from '../../../support/fakes/manual-clock.js';

/**
 * A destination on a manual clock: a liveness check answers at once unless the destination
 * is frozen, when it answers nothing and the check gives up at its timeout.
 */
function destination() {
  const clock = new ManualClock();
  const state = { frozen: false, checks: 0 };
  const answersAtAll = (timeoutMs: number) => {
    state.checks++;
    if (!state.frozen) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => clock.setTimeout(() => resolve(false), timeoutMs));
  };
  const changes: BreakerChange[] = [];
  const b = new CircuitBreaker(DEFAULT_CIRCUIT_BREAKER, {
    clock,
    answersAtAll,
    onStateChange: (c) => changes.push({ ...c, at: clock.now() } as BreakerChange),
  });
  return { clock, state, changes, b };
}

const at = (c: BreakerChange | undefined) => (c as (BreakerChange & { at: number }) | undefined)?.at;

describe('the breaker and a destination that answers nothing (shipped defaults)', () => {
  it('requests waiting, no answer for 1 s and none to the 2.5-s liveness check: open at 3.5 s, whatever the volume', async () => {
    const { clock, state, changes, b } = destination();
    state.frozen = true;
    b.tryAdmit(); // two requests that will never be answered: far below BREAKER_MIN_REQUESTS
    b.tryAdmit();
    await clock.advance(3_499);
    expect(b.state).toBe('closed');
    await clock.advance(1);
    expect(b.state).toBe('open');
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ from: 'closed', to: 'open', untilAnswering: true });
    expect(changes[0]!.reason).toMatch(/no answer for 3\.5 s and none to a liveness check within 2\.5 s/);
    expect(at(changes[0])).toBe(3_500);
    expect(b.tryAdmit()).toBeUndefined();
  });

  it('goes half-open as soon as the destination answers again, not after a back-off, and closes on its probes', async () => {
    const { clock, state, changes, b } = destination();
    state.frozen = true;
    b.tryAdmit();
    await clock.advance(3_500);
    expect(b.state).toBe('open');
    await clock.advance(60_000); // a long freeze: checks keep failing, it stays open
    expect(b.state).toBe('open');
    const checksWhileFrozen = state.checks;
    expect(checksWhileFrozen).toBeGreaterThan(20); // one every 2.5 s (timeouts back to back)
    state.frozen = false;
    const thawedAt = clock.now();
    await clock.advance(2_500); // the check in flight times out, the next one is answered
    expect(b.state).toBe('half-open');
    expect(at(changes.at(-1))! - thawedAt).toBeLessThanOrEqual(2_500);
    const probes = [b.tryAdmit(), b.tryAdmit(), b.tryAdmit()] as BreakerTicket[];
    expect(b.tryAdmit()).toBeUndefined();
    for (const p of probes) p.success();
    expect(b.state).toBe('closed');
  });

  it('a slow destination that answers every request after 2 s (one at a time) never opens it', async () => {
    const { clock, state, changes, b } = destination();
    for (let i = 0; i < 60; i++) {
      const t = b.tryAdmit();
      if (!t) throw new Error(`not admitted while ${b.state}`);
      await clock.advance(2_000);
      t.success();
    }
    expect(b.state).toBe('closed');
    expect(changes).toEqual([]);
    // Waiting on a slow answer costs at most one cheap check a second, each answered at once.
    expect(state.checks).toBeGreaterThan(0);
    expect(state.checks).toBeLessThanOrEqual(120);
  });

  it('requests answered while the check is out keep it closed even if the check then times out', async () => {
    const { clock, state, b } = destination();
    state.frozen = true; // the liveness check is the only thing that goes unanswered
    const first = b.tryAdmit()!;
    b.tryAdmit();
    await clock.advance(1_000); // the check goes out
    first.success(); // the destination answered a request meanwhile
    await clock.advance(2_500);
    expect(b.state).toBe('closed');
  });

  it('with nothing waiting there is nothing to be silent about: no checks at all', async () => {
    const { clock, state, b } = destination();
    state.frozen = true;
    b.tryAdmit()!.success();
    await clock.advance(60_000);
    expect(state.checks).toBe(0);
    expect(b.state).toBe('closed');
  });

  it('a request that was never sent (cancelled) is no answer', async () => {
    const { clock, state, b } = destination();
    state.frozen = true;
    b.tryAdmit();
    await clock.advance(500);
    b.tryAdmit()!.cancel();
    await clock.advance(3_000);
    expect(b.state).toBe('open');
  });

  it('dispose stops the checks', async () => {
    const { clock, state, b } = destination();
    state.frozen = true;
    b.tryAdmit();
    await clock.advance(3_500);
    b.dispose();
    const checks = state.checks;
    await clock.advance(30_000);
    expect(state.checks).toBe(checks);
    expect(clock.pending).toBeLessThanOrEqual(1); // at most the check that was in flight
  });
});
