import type { Consumer, Producer } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, uniqueName, waitFor } from '../../../harness/stack.js';

/**
 * patches/kafkajs+2.2.4.patch: when every partition a consumer fetches is paused, kafkajs
 * slept its whole maxWaitTimeInMs before looking again, so a partition resumed meanwhile
 * waited that long for its next fetch. The worker pauses partitions for backpressure, and
 * while draining a backlog all of them were sometimes paused at once: its thread then idled
 * for up to 250 ms. Patched, resume() ends the wait. A long maxWaitTimeInMs (20 s) makes the
 * difference plain: unpatched, the record resumed here arrives about 20 s later.
 */
describe('kafkajs: a resume wakes a consumer whose partitions were all paused (patched), against the real broker', () => {
  const kafka = kafkaClient('paused-fetch-test');
  const MAX_WAIT_MS = 20_000;
  let consumer: Consumer | undefined;
  let producer: Producer | undefined;

  afterAll(async () => {
    await consumer?.disconnect();
    await producer?.disconnect();
  });

  it('a partition resumed while every partition is paused is fetched at once, not after maxWaitTimeInMs', async () => {
    const topic = uniqueName('paused-fetch');
    await createTopics([{ topic, numPartitions: 1 }]);
    producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ value: 'before the pause' }] });

    consumer = kafka.consumer({
      groupId: `${topic}-group`,
      maxWaitTimeInMs: MAX_WAIT_MS,
      // No heartbeat goes out while kafkajs waits: longer than the wait, so the group holds.
      sessionTimeout: 3 * MAX_WAIT_MS,
    });
    const c = consumer;
    const received: { value: string; at: number }[] = [];
    let fetchesStarted = 0;
    c.on(c.events.FETCH_START, () => {
      fetchesStarted++;
    });
    await c.connect();
    await c.subscribe({ topics: [topic], fromBeginning: true });
    let fetchesAtPause: number | undefined;
    await c.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) received.push({ value: String(m.value), at: performance.now() });
        if (fetchesAtPause === undefined) {
          // Paused before this batch is handed back: the consumer's next fetch finds nothing to fetch.
          c.pause([{ topic }]);
          fetchesAtPause = fetchesStarted;
        }
      },
    });
    await waitFor('the record produced before the pause', () => received.length === 1, { timeoutMs: 30_000 });
    // The fetch after the pause has started: with every partition paused, it is waiting now.
    await waitFor('the next fetch, with every partition paused', () => fetchesStarted > fetchesAtPause!, {
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    await producer.send({ topic, messages: [{ value: 'after the resume' }] });
    const resumedAt = performance.now();
    c.resume([{ topic }]);
    await waitFor('the record produced while paused', () => received.length === 2, {
      timeoutMs: 2 * MAX_WAIT_MS,
      intervalMs: 20,
    });

    expect(received.map((r) => r.value)).toEqual(['before the pause', 'after the resume']);
    const waitedMs = received[1]!.at - resumedAt;
    // At once (tens of ms on this machine); unpatched, about MAX_WAIT_MS.
    expect(waitedMs, 'ms from resume() to the record').toBeLessThan(MAX_WAIT_MS / 4);

    // The consumer's next fetch waits up to MAX_WAIT_MS for a record: one more ends it, so that
    // stopping does not wait that long.
    const stopped = c.disconnect();
    await producer.send({ topic, messages: [{ value: 'while stopping' }] });
    await stopped;
    consumer = undefined;
  }, 90_000);
});
