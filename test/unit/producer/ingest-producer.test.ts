import type { ProducerRecord, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  BufferFullError,
  IngestProducer,
  type ProducerControl,
  TokenBucket,
} from '../../../src/producer/index.js';
import { settle } from '../../support/fakes/manual-clock.js';

/** Sleeping moves virtual time at once; each Kafka request takes `sendMs`. */
function virtual(sendMs = 1) {
  let t = 0;
  const requests: { at: number; record: ProducerRecord }[] = [];
  let fail: ((r: ProducerRecord) => Error | undefined) | undefined;
  let gate: Promise<void> | undefined;
  return {
    clock: {
      now: () => t,
      sleep: async (ms: number) => {
        t += ms;
      },
    },
    requests,
    failWhen: (f: typeof fail) => {
      fail = f;
    },
    /** Holds every Kafka request until the returned function is called. */
    hold: () => {
      let open!: () => void;
      gate = new Promise((r) => {
        open = r;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
    kafka: {
      send: async (record: ProducerRecord): Promise<RecordMetadata[]> => {
        if (gate) await gate;
        const err = fail?.(record);
        if (err) throw err;
        requests.push({ at: t, record });
        t += sendMs;
        return [{ topicName: record.topic, partition: 0, errorCode: 0 }];
      },
    },
    get now() {
      return t;
    },
  };
}

const control = (
  limits: Record<string, number | undefined>,
): ProducerControl & { limits: typeof limits } => ({
  limits,
  watch: () => {},
  limitFor(topic) {
    return this.limits[topic];
  },
  hotClients: () => undefined,
});

const msgs = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ key: `c-${(from + i) % 7}`, value: `m-${from + i}` }));
const values = (rs: { record: ProducerRecord }[]) =>
  rs.flatMap((r) => r.record.messages.map((m) => String(m.value)));

describe('TokenBucket', () => {
  it('gives the rate per second plus a bounded burst, and nothing limits an undefined rate', () => {
    let t = 0;
    const b = new TokenBucket(() => t, 100, 0.1);
    expect(b.take(50)).toBe(10); // the burst
    expect(b.take(1)).toBe(0);
    expect(b.waitMs(5)).toBeCloseTo(50);
    t += 1000;
    expect(b.take(1000)).toBe(10); // a second's worth, but never more than the burst saved
    b.setRate(undefined);
    expect(b.take(1e6)).toBe(1e6);
  });
});

describe('IngestProducer', () => {
  it('without a limit sends at once, in order, sharing requests between consecutive calls', async () => {
    const v = virtual();
    const p = new IngestProducer(v.kafka, { clock: v.clock });
    const release = v.hold();
    const sends = [0, 1, 2].map((i) => p.send({ topic: 't', acks: -1, messages: msgs(3, i * 3) }));
    release();
    await Promise.all(sends);
    expect(values(v.requests)).toEqual(msgs(9).map((m) => m.value));
    expect(v.requests.length).toBeLessThan(3); // the first alone, the two that waited together
    expect(v.requests.every((r) => r.record.acks === -1)).toBe(true);
    expect(p.stats()).toMatchObject({ sent: 9, buffered: { records: 0, bytes: 0 }, throttledMs: 0 });
  });

  it('sends no faster than the published limit', async () => {
    const v = virtual(0);
    const limits: string[] = [];
    const p = new IngestProducer(v.kafka, {
      clock: v.clock,
      control: control({ t: 200 }),
      onLimit: (topic, rate) => limits.push(`${topic}=${rate}`),
    });
    await p.send({ topic: 't', messages: msgs(2000) });
    // 2000 messages at 200/s: ten seconds, less the first burst (20).
    expect(v.now).toBeGreaterThanOrEqual(((2000 - 20) / 200) * 1000 - 1);
    expect(v.now).toBeLessThan(10_100);
    // Over any second, at most the rate plus the burst.
    for (let from = 0; from < 9_000; from += 500) {
      const inSecond = v.requests
        .filter((r) => r.at >= from && r.at < from + 1000)
        .reduce((a, r) => a + r.record.messages.length, 0);
      expect(inSecond).toBeLessThanOrEqual(200 + 20);
    }
    expect(values(v.requests)).toEqual(msgs(2000).map((m) => m.value));
    expect(limits).toEqual(['t=200']);
    expect(p.stats().throttledMs).toBeGreaterThan(9_000);
  });

  it('follows a limit that changes and is lifted', async () => {
    const v = virtual(0);
    // 100/s for the first second, then lifted.
    const c: ProducerControl = {
      watch: () => {},
      limitFor: () => (v.now < 1_000 ? 100 : undefined),
      hotClients: () => undefined,
    };
    const limits: (number | undefined)[] = [];
    const p = new IngestProducer(v.kafka, { clock: v.clock, control: c, onLimit: (_, r) => limits.push(r) });
    await p.send({ topic: 't', messages: msgs(500) });
    expect(limits).toEqual([100, undefined]);
    const inFirstSecond = v.requests
      .filter((r) => r.at < 1_000)
      .reduce((a, r) => a + r.record.messages.length, 0);
    expect(inFirstSecond).toBeLessThanOrEqual(110);
    expect(v.now).toBeLessThan(1_100); // the rest went at once
  });

  it('limits topics separately', async () => {
    const v = virtual(0);
    const p = new IngestProducer(v.kafka, { clock: v.clock, control: control({ slow: 10 }) });
    await Promise.all([
      p.send({ topic: 'slow', messages: msgs(20) }),
      p.send({ topic: 'fast', messages: msgs(20) }),
    ]);
    const fast = v.requests.filter((r) => r.record.topic === 'fast');
    expect(fast[0]!.at).toBe(0);
  });

  it('with whenFull "reject" refuses a call that does not fit, taking none of it', async () => {
    const v = virtual();
    const p = new IngestProducer(v.kafka, { clock: v.clock, maxBufferedRecords: 10, whenFull: 'reject' });
    const release = v.hold();
    const first = p.send({ topic: 't', messages: msgs(8) });
    const err = await p.send({ topic: 't', messages: msgs(3, 8) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BufferFullError);
    expect((err as BufferFullError).message).toBe(
      'producer buffer full: 8 records (48 bytes) wait to be sent; 3 more for t refused',
    );
    const fits = p.send({ topic: 't', messages: msgs(2, 8) });
    expect(p.stats()).toMatchObject({ buffered: { records: 10 }, refused: 1 });
    release();
    await Promise.all([first, fits]);
    expect(values(v.requests)).toEqual(msgs(10).map((m) => m.value));
  });

  it('with whenFull "block" makes the caller wait for room, first come first served, never above the bound', async () => {
    const v = virtual(5);
    const p = new IngestProducer(v.kafka, {
      clock: v.clock,
      control: control({ t: 100 }),
      maxBufferedRecords: 50,
      maxBatchRecords: 10,
    });
    const sends = Array.from({ length: 20 }, (_, i) => p.send({ topic: 't', messages: msgs(10, i * 10) }));
    let maxSeen = 0;
    const watching = (async () => {
      while (p.stats().sent < 200) {
        maxSeen = Math.max(maxSeen, p.stats().buffered.records);
        await settle();
      }
    })();
    await Promise.all([...sends, watching]);
    expect(maxSeen).toBeLessThanOrEqual(50);
    expect(p.stats().maxBufferedRecords).toBe(50);
    expect(p.stats().blockedMs).toBeGreaterThan(0);
    expect(values(v.requests)).toEqual(msgs(200).map((m) => m.value));
  });

  it('takes a call larger than the whole buffer when the buffer is empty', async () => {
    const v = virtual();
    const p = new IngestProducer(v.kafka, { clock: v.clock, maxBufferedRecords: 5, whenFull: 'reject' });
    await p.send({ topic: 't', messages: msgs(12) });
    expect(p.stats().sent).toBe(12);
  });

  it('a failed request rejects the calls it carried, frees their room, and the next calls go on', async () => {
    const v = virtual();
    const p = new IngestProducer(v.kafka, { clock: v.clock });
    v.failWhen((r) =>
      r.messages.some((m) => m.value === 'm-1') ? new Error('MESSAGE_TOO_LARGE') : undefined,
    );
    await expect(p.send({ topic: 't', messages: msgs(2) })).rejects.toThrow('MESSAGE_TOO_LARGE');
    expect(p.stats().buffered).toEqual({ records: 0, bytes: 0 });
    await p.send({ topic: 't', messages: msgs(2, 2) });
    expect(values(v.requests)).toEqual(['m-2', 'm-3']);
  });

  it('flush waits for everything buffered; close refuses new sends', async () => {
    const v = virtual(0);
    const p = new IngestProducer(v.kafka, { clock: v.clock, control: control({ t: 50 }) });
    void p.send({ topic: 't', messages: msgs(100) });
    await p.close();
    expect(p.stats().sent).toBe(100);
    await expect(p.send({ topic: 't', messages: msgs(1) })).rejects.toThrow('producer closed');
  });
});
