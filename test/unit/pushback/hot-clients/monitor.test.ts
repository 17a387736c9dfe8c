import { describe, expect, it } from 'vitest';
import { HotClientMonitor, HotClientSampler } from '../../../../src/pushback/hot-clients/monitor.js';
import type { HeavyHitter } from '../../../../src/pushback/hot-clients/space-saving.js';
import { ManualClock } from '../../../support/fakes/manual-clock.js';

const settings = { enterRatePerSec: 10, leaveRatePerSec: 5, spread: 4, sketchSize: 8, intervalMs: 1000 };

describe('HotClientSampler', () => {
  it('counts per topic within its bound and starts over on drain', () => {
    const s = new HotClientSampler(8);
    for (let i = 0; i < 1000; i++) s.observe('t', i % 2 === 0 ? 'hot' : `c-${i}`);
    s.observe('u', 'x');
    const drained = s.drain();
    expect(drained.get('t')!.length).toBe(8);
    expect(drained.get('t')![0]!.key).toBe('hot');
    expect(drained.get('u')).toEqual([{ key: 'x', count: 1, error: 0 }]);
    expect(s.drain().size).toBe(0);
  });
});

describe('HotClientMonitor', () => {
  function setup(failReports = false) {
    const clock = new ManualClock(0);
    const sampler = new HotClientSampler(8);
    const calls: string[] = [];
    const errors: string[] = [];
    const hotSets: string[] = [];
    const monitor = new HotClientMonitor(settings, {
      sampler,
      topics: ['t'],
      clock,
      wallNow: () => 10_000 + clock.now(),
      store: {
        report: async (topic: string, interval: number, hitters: readonly HeavyHitter[]) => {
          if (failReports) throw new Error('Connection is closed.');
          calls.push(
            `report ${topic} ${interval} ${hitters.map((h) => `${h.key}=${h.count}`).join(',')} @${clock.now()}`,
          );
        },
        decide: async (topic: string, interval: number) => {
          calls.push(`decide ${topic} ${interval} @${clock.now()}`);
          return { hot: new Set(['hot']), entered: ['hot'], left: [] };
        },
      },
      onHotSet: (topic, hot) => hotSets.push(`${topic}:${[...hot].join(',')}`),
      onError: (stage, err) => errors.push(`${stage}: ${(err as Error).message}`),
    });
    return { clock, sampler, calls, errors, hotSets, monitor };
  }

  it('reports each interval at its end and decides a quarter interval later', async () => {
    const { clock, sampler, calls, hotSets, monitor } = setup();
    await clock.advance(300); // wall 10 300: inside interval 10
    monitor.start();
    for (let i = 0; i < 30; i++) sampler.observe('t', 'hot');
    await clock.advance(700); // wall 11 000: interval 10 ends
    await clock.advance(250);
    await clock.advance(1000);
    expect(calls).toEqual(['report t 10 hot=30 @1000', 'decide t 10 @1250', 'decide t 11 @2250']);
    expect(hotSets).toEqual(['t:hot', 't:hot']);
    await monitor.stop();
    expect(clock.pending).toBe(0);
  });

  it('goes on when Redis fails', async () => {
    const { clock, sampler, errors, calls, monitor } = setup(true);
    monitor.start();
    sampler.observe('t', 'a');
    await clock.advance(2_500);
    expect(errors).toEqual(['report: Connection is closed.']);
    expect(calls.filter((c) => c.startsWith('decide'))).toHaveLength(2);
    await monitor.stop();
  });
});
