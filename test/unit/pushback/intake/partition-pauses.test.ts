import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PartitionPauses, type PauseReason } from '../../../../src/pushback/intake/partition-pauses.js';

/** A stand-in for kafkajs's pause/resume that can refuse, as kafkajs does while it restarts its consumer. */
function fakeConsumer() {
  const paused = new Set<string>();
  const calls: string[] = [];
  let refusing = false;
  const act = (what: 'pause' | 'resume') => (tps: { topic: string; partitions: number[] }[]) => {
    if (refusing) throw new Error('Consumer group was not initialized, consumer#run must be called first');
    for (const { topic, partitions } of tps) {
      for (const p of partitions) {
        calls.push(`${what} ${topic}[${p}]`);
        if (what === 'pause') paused.add(`${topic}[${p}]`);
        else paused.delete(`${topic}[${p}]`);
      }
    }
  };
  return {
    consumer: { pause: act('pause'), resume: act('resume') },
    paused,
    calls,
    refuse: (on: boolean) => {
      refusing = on;
    },
    forgetAll: () => paused.clear(),
  };
}

const observed = () => {
  const seen: string[] = [];
  return {
    seen,
    observer: {
      paused: (t: string, p: number, r: PauseReason, on: boolean) => seen.push(`${t}[${p}] ${r} ${on}`),
    },
  };
};

describe('PartitionPauses', () => {
  it('pauses on the first reason and resumes only when the last one is gone', () => {
    const k = fakeConsumer();
    const o = observed();
    const pauses = new PartitionPauses(k.consumer as never, o.observer, pino({ level: 'silent' }));
    pauses.set('t', 0, 'backpressure', true);
    pauses.set('t', 0, 'breaker', true);
    pauses.set('t', 0, 'backpressure', false);
    expect(k.paused.has('t[0]')).toBe(true);
    pauses.set('t', 0, 'breaker', false);
    expect(k.paused.has('t[0]')).toBe(false);
    expect(k.calls).toEqual(['pause t[0]', 'resume t[0]']);
    expect(o.seen).toEqual([
      't[0] backpressure true',
      't[0] breaker true',
      't[0] backpressure false',
      't[0] breaker false',
    ]);
  });

  it('does not throw while kafkajs refuses (restarting after a crash), and re-applies held pauses on reapply()', () => {
    const k = fakeConsumer();
    const pauses = new PartitionPauses(k.consumer as never, observed().observer, pino({ level: 'silent' }));
    pauses.set('t', 1, 'backpressure', true);
    // kafkajs restarts its consumer: it refuses calls and forgets its pauses.
    k.refuse(true);
    k.forgetAll();
    expect(() => pauses.set('t', 2, 'starting', true)).not.toThrow();
    expect(pauses.isPaused('t', 2)).toBe(true);
    k.refuse(false);
    pauses.reapply();
    expect([...k.paused].sort()).toEqual(['t[1]', 't[2]']);
  });

  it('forgets a revoked partition: its reasons end and kafkajs resumes it for its next owner', () => {
    const k = fakeConsumer();
    const o = observed();
    const pauses = new PartitionPauses(k.consumer as never, o.observer, pino({ level: 'silent' }));
    pauses.set('t', 3, 'shed', true);
    pauses.forget('t', 3);
    expect(pauses.isPaused('t', 3)).toBe(false);
    expect(k.paused.has('t[3]')).toBe(false);
    expect(o.seen.at(-1)).toBe('t[3] shed false');
  });
});
