import { describe, expect, it } from 'vitest';
import { EventLoopHeartbeat } from '../../../src/http/event-loop-heartbeat.js';
import { fakeClock } from '../../support/logs/captured-log.js';

const heartbeat = () => {
  const clock = fakeClock();
  const hb = new EventLoopHeartbeat({ intervalMs: 1_000, maxLagMs: 5_000, holdMs: 5_000, now: clock.now });
  return { clock, hb };
};

describe('EventLoopHeartbeat', () => {
  it('is alive while beats come on time', () => {
    const { clock, hb } = heartbeat();
    for (let i = 0; i < 10; i++) {
      clock.advance(1_010);
      hb.beat();
    }
    expect(hb.status()).toEqual({ alive: true, lagMs: 10 });
  });

  it('reports a stall when no beat came for longer than the allowed lag', () => {
    const { clock, hb } = heartbeat();
    clock.advance(6_500);
    expect(hb.status()).toMatchObject({ alive: false, reason: 'event loop heartbeat missing for 6.5 s' });
  });

  it('keeps reporting a stall seen by a late beat for the hold time, then recovers', () => {
    const { clock, hb } = heartbeat();
    clock.advance(9_000); // the loop was blocked: the beat due at 1 s runs at 9 s
    hb.beat();
    expect(hb.status()).toMatchObject({
      alive: false,
      lagMs: 8_000,
      reason: 'event loop was blocked for 8.0 s',
    });
    for (let i = 0; i < 4; i++) {
      clock.advance(1_000);
      hb.beat();
      expect(hb.status().alive).toBe(false);
    }
    clock.advance(1_000);
    hb.beat();
    expect(hb.status()).toEqual({ alive: true, lagMs: 0 });
  });

  it('tolerates lag up to the limit', () => {
    const { clock, hb } = heartbeat();
    clock.advance(6_000);
    hb.beat();
    expect(hb.status().alive).toBe(true);
  });
});
