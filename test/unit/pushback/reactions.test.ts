import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../../harness/prometheus-text.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import { Assignment, type MemberAssignment } from '../../../src/model/topic-partition.js';
import { PushbackHolds } from '../../../src/pushback/intake/holds.js';
import { PartitionPauses } from '../../../src/pushback/intake/partition-pauses.js';
import { pushbackReactions } from '../../../src/pushback/reactions.js';
import { capturedLog } from '../../support/logs/captured-log.js';

/** The reactions on a real PartitionPauses over a consumer that records which partitions are paused. */
function setup() {
  const paused = new Set<string>();
  const consumer = {
    pause: (tps: { topic: string; partitions: number[] }[]) => {
      for (const { topic, partitions } of tps) for (const p of partitions) paused.add(`${topic}[${p}]`);
    },
    resume: (tps: { topic: string; partitions: number[] }[]) => {
      for (const { topic, partitions } of tps) for (const p of partitions) paused.delete(`${topic}[${p}]`);
    },
  };
  const metrics = new WorkerMetrics({ topics: ['orders', 'reviews'], defaultMetrics: false });
  const { log, lines } = capturedLog('info');
  const pauses = new PartitionPauses(
    consumer,
    {
      paused: (topic, partition, reason, on) =>
        metrics.setPartitionPaused({ topic, partition: String(partition) }, reason, on),
    },
    log,
  );
  const assignment = new Assignment();
  const holds = new PushbackHolds(pauses, assignment);
  /** A GROUP_JOIN as the worker handles it: the record first, then the holds on it. */
  const assign = (a: MemberAssignment) => {
    assignment.set(a);
    holds.applyToAssignment();
  };
  const hooks = pushbackReactions({ metrics, log, holds });
  const value = async (name: string, labels: Record<string, string> = {}) =>
    sampleValue(parsePrometheusText(await metrics.registry.metrics()), name, labels);
  const sorted = () => [...paused].sort();
  return { hooks, assign, pauses, paused: sorted, lines, value };
}

describe('push-back reactions in the worker', () => {
  it('an open breaker pauses every assigned partition, with one line and the metric; half-open resumes them', async () => {
    const { hooks, assign, paused, lines, value } = setup();
    assign({ orders: [0, 1], reviews: [0] });
    hooks.onBreakerChange!({
      from: 'closed',
      to: 'open',
      reason: '5 requests in a row failed',
      openForMs: 5_000,
    });
    expect(paused()).toEqual(['orders[0]', 'orders[1]', 'reviews[0]']);
    expect(await value('rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
    expect(
      await value('rxingest_partition_paused', { topic: 'orders', partition: '1', reason: 'breaker' }),
    ).toBe(1);
    expect(lines.find((l) => l.to === 'open')?.probeInMs).toBe(5_000);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'Elasticsearch circuit breaker open (5 requests in a row failed): intake paused on every partition; requests wait, none is sent',
    ]);

    // A partition that comes in while it is open is held too.
    assign({ orders: [0, 1, 2], reviews: [0] });
    expect(paused()).toContain('orders[2]');

    hooks.onBreakerChange!({ from: 'open', to: 'half-open', reason: 'open for 5 s; probing' });
    expect(paused()).toEqual([]);
    expect(await value('rxingest_breaker_state', { target: 'elasticsearch' })).toBe(1);
    hooks.onBreakerChange!({ from: 'half-open', to: 'closed', reason: '3 probe request(s) succeeded' });
    expect(await value('rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);
    expect(lines.filter((l) => l.target === 'elasticsearch')).toHaveLength(3);
  });

  it('a heap near its limit pauses every assigned partition (reason memory), one line each way', async () => {
    const { hooks, assign, paused, pauses, lines, value } = setup();
    assign({ orders: [0, 1], reviews: [0] });
    pauses.set('orders', 0, 'backpressure', true);
    hooks.onHeapChange!({ high: true, usedMb: 170, limitMb: 240, reason: 'live-heap-high' });
    expect(paused()).toEqual(['orders[0]', 'orders[1]', 'reviews[0]']);
    expect(
      await value('rxingest_partition_paused', { topic: 'reviews', partition: '0', reason: 'memory' }),
    ).toBe(1);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'heap near its limit (170 of 240 MB alive after a major GC): intake paused on every partition until in-flight work is done',
    ]);
    assign({ orders: [0, 1, 2], reviews: [0] });
    expect(paused()).toContain('orders[2]');

    hooks.onHeapChange!({ high: false, usedMb: 110, limitMb: 240, reason: 'heap-shrank' });
    // The partition's own backpressure still holds it.
    expect(paused()).toEqual(['orders[0]']);
    expect(
      await value('rxingest_partition_paused', { topic: 'reviews', partition: '0', reason: 'memory' }),
    ).toBe(0);
    expect(lines.filter((l) => l.usedMb !== undefined).map((l) => l.msg)).toEqual([
      'heap near its limit (170 of 240 MB alive after a major GC): intake paused on every partition until in-flight work is done',
      'heap down to 110 of 240 MB: intake resumed',
    ]);

    hooks.onHeapChange!({ high: true, usedMb: 175, limitMb: 240, reason: 'live-heap-high' });
    hooks.onHeapChange!({ high: false, usedMb: 150, limitMb: 240, reason: 'drained' });
    expect(paused()).toEqual(['orders[0]']);
    expect(lines.at(-1)).toMatchObject({
      level: 30,
      reason: 'drained',
      msg: 'nothing left in flight at 150 of 240 MB in use: intake resumed',
    });
  });

  it('shedding pauses only the topic’s partitions; a breaker and a shed hold one partition independently', async () => {
    const { hooks, assign, paused, pauses, lines, value } = setup();
    assign({ orders: [0, 1], reviews: [0, 1] });
    pauses.set('reviews', 1, 'backpressure', true);
    hooks.onShedChange!({ shed: [{ topic: 'reviews', reason: 'manual' }], resumed: [] });
    expect(paused()).toEqual(['reviews[0]', 'reviews[1]']);
    expect(await value('rxingest_topic_shed', { topic: 'reviews' })).toBe(1);
    expect(await value('rxingest_topic_shed', { topic: 'orders' })).toBe(0);

    hooks.onBreakerChange!({ from: 'closed', to: 'open', reason: 'x', openForMs: 1_000 });
    hooks.onShedChange!({ shed: [], resumed: ['reviews'] });
    expect(paused()).toEqual(['orders[0]', 'orders[1]', 'reviews[0]', 'reviews[1]']);
    hooks.onBreakerChange!({ from: 'open', to: 'half-open', reason: 'y' });
    // Only its own backpressure still holds reviews[1].
    expect(paused()).toEqual(['reviews[1]']);
    expect(await value('rxingest_topic_shed', { topic: 'reviews' })).toBe(0);
    expect(lines.filter((l) => l.topic === 'reviews').map((l) => l.msg)).toEqual([
      'shedding topic reviews (manual): its partitions are paused, records stay in Kafka',
      'topic reviews no longer shed: consuming it again',
    ]);
  });

  it('exports the group’s lag for this worker’s partitions only, and the hot clients summed over topics', async () => {
    const { hooks, assign, value } = setup();
    assign({ orders: [1] });
    const part = (partition: number, lag: number) => ({ partition, end: lag, committed: 0, lag });
    hooks.onLag!(
      new Map([['orders', { end: 0, committed: 0, lag: 12, partitions: [part(0, 5), part(1, 7)] }]]),
    );
    expect(await value('rxingest_consumer_lag', { topic: 'orders', partition: '1' })).toBe(7);
    expect(await value('rxingest_consumer_lag', { topic: 'orders', partition: '0' })).toBeUndefined();
    hooks.onHotClients!('orders', new Set(['a', 'b']), ['a', 'b'], []);
    hooks.onHotClients!('reviews', new Set(['c']), ['c'], []);
    expect(await value('rxingest_hot_clients')).toBe(3);
    hooks.onHotClients!('orders', new Set(), [], ['a', 'b']);
    expect(await value('rxingest_hot_clients')).toBe(1);
  });

  it('each broker sample replaces the last as the partition’s lag, down to 0 once caught up', async () => {
    const { hooks, assign, value } = setup();
    assign({ orders: [0] });
    const sample = (lag: number) =>
      new Map([
        [
          'orders',
          { end: lag, committed: 0, lag, partitions: [{ partition: 0, end: lag, committed: 0, lag }] },
        ],
      ]);
    hooks.onLag!(sample(900));
    expect(await value('rxingest_consumer_lag', { topic: 'orders', partition: '0' })).toBe(900);
    hooks.onLag!(sample(0));
    expect(await value('rxingest_consumer_lag', { topic: 'orders', partition: '0' })).toBe(0);
  });

  it('logs a producer limit when it is first published and when it is lifted, not at every change', () => {
    const { hooks, lines } = setup();
    const state = (lag: number) => ({ atMs: 0, end: 0, committed: 0, lag }) as never;
    hooks.onProducerLimit!('orders', 900, state(8_000));
    hooks.onProducerLimit!('orders', 1_100, state(7_000));
    hooks.onProducerLimit!('orders', undefined, state(500));
    expect(lines.filter((l) => l.topic === 'orders').map((l) => l.msg)).toEqual([
      'producers of orders limited to 900 messages/s (lag 8000)',
      'producer limit on orders lifted (lag 500)',
    ]);
  });

  it('the concurrency limit is the gauge', async () => {
    const { hooks, value } = setup();
    hooks.onConcurrencyLimit!(7);
    expect(await value('rxingest_es_concurrency_limit')).toBe(7);
  });

  it('the Redis breaker: one line per change and rxingest_breaker_state{target="redis"}; it pauses nothing', async () => {
    const { hooks, assign, paused, lines, value } = setup();
    assign({ orders: [0, 1], reviews: [0] });
    expect(await value('rxingest_breaker_state', { target: 'redis' })).toBe(0);
    hooks.onRedisBreakerChange!({
      from: 'closed',
      to: 'open',
      reason: '5 requests in a row failed',
      openForMs: 5_000,
    });
    expect(await value('rxingest_breaker_state', { target: 'redis' })).toBe(2);
    expect(await value('rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);
    expect(paused()).toEqual([]);
    hooks.onRedisBreakerChange!({ from: 'open', to: 'half-open', reason: 'probing' });
    expect(await value('rxingest_breaker_state', { target: 'redis' })).toBe(1);
    hooks.onRedisBreakerChange!({ from: 'half-open', to: 'closed', reason: '1 probe request(s) succeeded' });
    expect(await value('rxingest_breaker_state', { target: 'redis' })).toBe(0);
    expect(lines.map((l) => l.msg)).toEqual([
      'Redis circuit breaker open (5 requests in a row failed): owner marks not used, Elasticsearch decides every copy; no Redis call until a probe',
      'Redis circuit breaker half-open: probe calls go out',
      'Redis circuit breaker closed (1 probe request(s) succeeded)',
    ]);
  });
});
