import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { timeOncePerTick } from '../../../src/graph/time-once-per-tick.js';

/** A scheduler whose clock the test sets, counting how often it is read. */
function countingClock() {
  const clock = { t: 1_000, reads: 0 };
  const scheduler: SchedulerLike = {
    now: () => {
      clock.reads++;
      return clock.t;
    },
    schedule: asyncScheduler.schedule.bind(asyncScheduler),
  };
  return { clock, scheduler };
}

describe('timeOncePerTick', () => {
  it('reads the clock once for a whole synchronous run, and again in the next turn', async () => {
    const { clock, scheduler } = countingClock();
    const once = timeOncePerTick(scheduler);
    const seen: number[] = [];
    for (let i = 0; i < 500; i++) {
      seen.push(once.now());
      clock.t++; // time passes within the run: it is not seen until the next turn
    }
    expect(new Set(seen)).toEqual(new Set([1_000]));
    expect(clock.reads).toBe(1);
    await Promise.resolve();
    expect(once.now()).toBe(1_500);
    expect(clock.reads).toBe(2);
  });

  it('schedules on the scheduler it wraps', async () => {
    const once = timeOncePerTick(asyncScheduler);
    const ran = await new Promise<number>((resolve) => {
      once.schedule(() => resolve(asyncScheduler.now()), 5);
    });
    expect(ran).toBeGreaterThan(0);
  });
});
