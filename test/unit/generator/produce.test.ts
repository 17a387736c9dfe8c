import type { ProducerRecord } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ProduceError, runProducer } from '../../../src/generator/produce.js';
import { countKinds, planWorkload, type WorkloadRecord } from '../../../src/generator/workload.js';

/** A virtual clock: sleeping moves time forward at once; sends take `sendMs`. */
function virtualClock() {
  let t = 1_000;
  return {
    now: () => t,
    sleep: async (ms: number) => {
      t += Math.max(0, ms);
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

function fakeProducer(clock: ReturnType<typeof virtualClock>, sendMs = 2) {
  const calls: { at: number; record: ProducerRecord }[] = [];
  return {
    calls,
    producer: {
      send: async (record: ProducerRecord) => {
        calls.push({ at: clock.now() - 1_000, record });
        clock.advance(sendMs);
        return [];
      },
    },
  };
}

describe('runProducer', () => {
  const plan = planWorkload({
    seed: 3,
    ratePerSec: 1000,
    durationMs: 2000,
    maxMessageBytes: 2048,
    poisonShare: 0.02,
  });

  it('sends every record in plan order, with acks -1, never before its time', async () => {
    const clock = virtualClock();
    const { calls, producer } = fakeProducer(clock);
    const seen: WorkloadRecord[] = [];
    const progress: number[] = [];
    const result = await runProducer(
      { topic: 't', records: plan, progressIntervalMs: 500 },
      { producer, clock, onSent: (rs) => seen.push(...rs), onProgress: (p) => progress.push(p.total) },
    );
    expect(result.total).toBe(plan.length);
    expect(result.sent).toEqual(countKinds(plan));
    expect(result.aborted).toBe(false);
    expect(result.rejected).toBe(0);
    expect(seen).toEqual(plan);

    const sent = calls.flatMap((c) => c.record.messages);
    expect(sent.map((m) => m.value)).toEqual(plan.map((r) => r.value));
    expect(sent.map((m) => m.key)).toEqual(plan.map((r) => r.key));
    let i = 0;
    for (const c of calls) {
      expect(c.record.topic).toBe('t');
      expect(c.record.acks).toBe(-1);
      for (const _ of c.record.messages) expect(plan[i++]!.sendAtMs).toBeLessThanOrEqual(c.at);
    }
    // Paced in ticks of ~20 ms: about 100 sends over 2 s, not one per record, not one for all.
    expect(calls.length).toBeGreaterThan(60);
    expect(calls.length).toBeLessThan(200);
    expect(result.elapsedMs).toBeGreaterThanOrEqual(1990);
    expect(result.ratePerSec).toBeGreaterThan(900);
    expect(result.ratePerSec).toBeLessThan(1100);
    expect(progress.length).toBeGreaterThanOrEqual(3);
  });

  it('bounds each send by bytes and count, and sends oversize poison alone', async () => {
    const batch = planWorkload({ count: 3000, ratePerSec: 1e6, maxMessageBytes: 2048, poisonShare: 0.05 });
    const clock = virtualClock();
    const { calls, producer } = fakeProducer(clock, 0);
    await runProducer(
      { topic: 't', records: batch, maxBatchBytes: 8 * 1024, maxBatchRecords: 40 },
      { producer, clock },
    );
    expect(calls.flatMap((c) => c.record.messages)).toHaveLength(3000);
    for (const c of calls) {
      const msgs = c.record.messages;
      expect(msgs.length).toBeLessThanOrEqual(40);
      const bytes = msgs.reduce((n, m) => n + ((m.value as Buffer | null)?.length ?? 0), 0);
      if (msgs.length > 1) {
        expect(bytes).toBeLessThanOrEqual(8 * 1024);
        for (const m of msgs) expect((m.value as Buffer | null)?.length ?? 0).toBeLessThanOrEqual(2048);
      }
    }
  });

  it('counts a record the broker refuses as too large and goes on', async () => {
    const clock = virtualClock();
    const batch = planWorkload({
      count: 600,
      maxMessageBytes: 2048,
      poisonShare: 0.05,
      poisonKinds: ['oversize'],
    });
    const refused: WorkloadRecord[] = [];
    let delivered = 0;
    const producer = {
      send: async (r: ProducerRecord) => {
        if (r.messages.some((m) => ((m.value as Buffer | null)?.length ?? 0) > 2048)) {
          const cause = Object.assign(new Error('too large'), { type: 'MESSAGE_TOO_LARGE' });
          throw Object.assign(new Error('non retriable'), { cause });
        }
        delivered += r.messages.length;
        return [];
      },
    };
    const result = await runProducer(
      { topic: 't', records: batch },
      { producer, clock, onRejected: (r) => refused.push(r) },
    );
    expect(result.rejected).toBe(30);
    expect(refused.every((r) => r.poisonKind === 'oversize')).toBe(true);
    expect(delivered).toBe(570);
    expect(result.total).toBe(570);
  });

  it('fails with a ProduceError carrying what was sent', async () => {
    const clock = virtualClock();
    let sends = 0;
    const producer = {
      send: async () => {
        if (++sends === 3) throw new Error('broker gone');
        return [];
      },
    };
    const err = await runProducer({ topic: 't', records: plan }, { producer, clock }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProduceError);
    expect((err as ProduceError).message).toMatch(/sending to t failed: broker gone/);
    expect((err as ProduceError).result.total).toBeGreaterThan(0);
    expect((err as ProduceError).result.total).toBeLessThan(plan.length);
  });

  it('stops early on abort and says so', async () => {
    const controller = new AbortController();
    const clock = virtualClock();
    const { producer } = fakeProducer(clock);
    const result = await runProducer(
      { topic: 't', records: plan, signal: controller.signal },
      { producer, clock, onSent: () => clock.now() - 1_000 > 500 && controller.abort() },
    );
    expect(result.aborted).toBe(true);
    expect(result.total).toBeGreaterThan(400);
    expect(result.total).toBeLessThan(700);
  });

  it('paces in real time too (short run)', async () => {
    const short = planWorkload({ count: 100, ratePerSec: 500, poisonShare: 0, duplicateShare: 0 });
    const sent: number[] = [];
    const start = performance.now();
    const result = await runProducer(
      { topic: 't', records: short, tickMs: 10 },
      {
        producer: {
          send: async (r) => {
            sent.push(r.messages.length);
            return [];
          },
        },
      },
    );
    const took = performance.now() - start;
    expect(result.total).toBe(100);
    // Never early; how many ticks it took depends on the machine's load.
    expect(took).toBeGreaterThanOrEqual(190);
    expect(sent.reduce((a, b) => a + b, 0)).toBe(100);
  });

  it('refuses records out of order', async () => {
    const clock = virtualClock();
    const { producer } = fakeProducer(clock);
    const [a, b] = planWorkload({ count: 2, poisonShare: 0, duplicateShare: 0 });
    await expect(runProducer({ topic: 't', records: [b!, a!] }, { producer, clock })).rejects.toThrow(
      /sorted/,
    );
  });
});
