import { describe, expect, it } from 'vitest';
import { LagMonitor } from '../../../../src/pushback/lag/monitor.js';
import type { TopicLagSample } from '../../../../src/pushback/lag/sampler.js';
import { ManualClock } from '../../../support/fakes/manual-clock.js';

const policy = { lagHigh: 1000, lagLow: 100, headroom: 0.2, minRatePerSec: 10 };

function setup() {
  const clock = new ManualClock();
  const offsets = { end: 0, committed: 0 };
  const calls: string[] = [];
  let redisDown = false;
  const errors: string[] = [];
  const limitChanges: [string, number | undefined][] = [];
  const monitor = new LagMonitor(
    { intervalMs: 1000, policy },
    {
      clock,
      sample: async () =>
        new Map<string, TopicLagSample>([
          ['t', { ...offsets, lag: offsets.end - offsets.committed, partitions: [] }],
        ]),
      limits: {
        publish: async (topic, rate) => {
          if (redisDown) throw new Error('Connection is closed.');
          calls.push(`publish ${topic} ${rate}`);
        },
        lift: async (topic) => {
          if (redisDown) throw new Error('Connection is closed.');
          calls.push(`lift ${topic}`);
        },
      },
      onLimit: (topic, rate) => limitChanges.push([topic, rate]),
      onError: (stage, err) => errors.push(`${stage}: ${(err as Error).message}`),
    },
  );
  return {
    clock,
    offsets,
    calls,
    errors,
    limitChanges,
    monitor,
    setRedisDown: (v: boolean) => {
      redisDown = v;
    },
  };
}

describe('LagMonitor', () => {
  it('publishes a limit when lag grows past the threshold, refreshes it every interval, lifts it once', async () => {
    const { clock, offsets, calls, limitChanges, monitor } = setup();
    monitor.start();
    // 2000 produced and 500 drained a second: limited once the drain is measured (3 intervals).
    for (let s = 0; s < 5; s++) {
      offsets.end += 2000;
      offsets.committed += 500;
      await clock.advance(1000);
    }
    expect(calls.filter((c) => c.startsWith('publish'))).toHaveLength(3);
    expect(calls[0]).toMatch(/^publish t \d+$/);
    // Caught up, producers gone: the limit grows until they plainly do not use it, then one lift.
    offsets.committed = offsets.end;
    await clock.advance(10_000);
    expect(calls.filter((c) => c === 'lift t')).toHaveLength(1);
    // Every change is reported (the limit follows the drain rate), the lift once, last.
    expect(limitChanges[0]![1]).toBeGreaterThan(0);
    expect(limitChanges.filter(([, r]) => r === undefined)).toHaveLength(1);
    expect(limitChanges.at(-1)).toEqual(['t', undefined]);
    await monitor.stop();
    expect(clock.pending).toBe(0);
  });

  it('goes on when Redis is down, and retries the lift when it is back', async () => {
    const { clock, offsets, calls, errors, monitor, setRedisDown } = setup();
    monitor.start();
    for (let s = 0; s < 5; s++) {
      offsets.end += 2000;
      offsets.committed += 500;
      await clock.advance(1000);
    }
    setRedisDown(true);
    offsets.committed = offsets.end;
    await clock.advance(10_000);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toBe('publish: Connection is closed.');
    setRedisDown(false);
    await clock.advance(1000);
    expect(calls.at(-1)).toBe('lift t');
    await monitor.stop();
  });

  it('a failed sample is reported and the next interval samples again', async () => {
    const clock = new ManualClock();
    let n = 0;
    const errors: string[] = [];
    const monitor = new LagMonitor(
      { intervalMs: 1000, policy },
      {
        clock,
        sample: async () => {
          n++;
          if (n === 1) throw new Error('broker unreachable');
          return new Map();
        },
        onError: (stage) => errors.push(stage),
      },
    );
    monitor.start();
    await clock.advance(2500);
    expect(errors).toEqual(['sample']);
    expect(n).toBe(3);
    await monitor.stop();
    expect(clock.pending).toBe(0);
  });
});
