import { describe, expect, it } from 'vitest';
import { StallWatch } from '../../../src/worker/stall-watch.js';

describe('StallWatch', () => {
  const clock = () => {
    let t = 0;
    return {
      now: () => t,
      advance: (ms: number) => {
        t += ms;
      },
    };
  };

  it('says "stalled" once work has waited timeoutMs without progress, and "moving" once it progresses', () => {
    const c = clock();
    const w = new StallWatch(1_000, c.now);
    expect(w.check(true)).toBeUndefined();
    c.advance(999);
    expect(w.check(true)).toBeUndefined();
    c.advance(1);
    expect(w.check(true)).toEqual({ stalled: true, idleForMs: 1_000 });
    c.advance(5_000);
    expect(w.check(true)).toBeUndefined(); // still stalled: no second line
    w.progressed();
    expect(w.check(true)).toEqual({ stalled: false, idleForMs: 0 });
  });

  it('is never stalled with nothing waiting, however long it is idle', () => {
    const c = clock();
    const w = new StallWatch(1_000, c.now);
    c.advance(60_000);
    expect(w.check(false)).toBeUndefined();
    // Work arrives now: the clock starts from here, not from the idle past.
    c.advance(500);
    expect(w.check(true)).toBeUndefined();
    c.advance(1_000);
    expect(w.check(true)).toEqual({ stalled: true, idleForMs: 1_500 });
    expect(w.check(false)).toEqual({ stalled: false, idleForMs: 0 });
  });
});
