import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../harness/stack.js';
import { Readiness } from '../../../src/http/readiness.js';
import { feedHealth, type HealthFeed } from '../../../src/worker/health-feed.js';
import { FakeConsumerEvents, FakePing } from '../../support/fakes/fake-health-sources.js';
import { capturedLog, fakeClock } from '../../support/logs/captured-log.js';

const feeds: HealthFeed[] = [];
afterEach(() => {
  for (const f of feeds.splice(0)) f.stop();
});

function setup() {
  const clock = fakeClock();
  const consumer = new FakeConsumerEvents();
  const es = new FakePing();
  const readiness = new Readiness({
    joined: 'not yet joined',
    elasticsearch: 'not checked',
    kafka: 'no answer',
  });
  const { log, lines } = capturedLog();
  const feed = feedHealth({
    readiness,
    es: es as never,
    consumer: consumer as never,
    log,
    groupId: 'g',
    probeIntervalMs: 10,
    kafkaSilenceMs: 15_000,
    now: clock.now,
  });
  feeds.push(feed);
  return { clock, consumer, es, readiness, lines, feed };
}

const checkOk = (r: Readiness, c: 'joined' | 'elasticsearch' | 'kafka') => r.report().checks[c].ok;

describe('feedHealth', () => {
  it('gets ready when the group is joined, Kafka answers and Elasticsearch answers a ping', async () => {
    const { consumer, readiness, lines } = setup();
    await waitFor('the first ping', () => checkOk(readiness, 'elasticsearch'), {
      timeoutMs: 2_000,
      intervalMs: 5,
    });
    expect(readiness.report()).toMatchObject({
      ready: false,
      reason: 'not yet joined; no answer from Kafka yet',
    });
    consumer.emit('GROUP_JOIN');
    await waitFor('ready', () => readiness.report().ready, { timeoutMs: 2_000, intervalMs: 5 });
    expect(lines.filter((l) => l.msg === 'ready')).toHaveLength(1);
  });

  it('is not ready while Elasticsearch is unreachable or refuses the worker, and ready again after', async () => {
    const { consumer, es, readiness, lines } = setup();
    consumer.emit('GROUP_JOIN');
    await waitFor('ready', () => readiness.report().ready, { timeoutMs: 2_000, intervalMs: 5 });
    es.answer = 'down';
    await waitFor('not ready', () => !checkOk(readiness, 'elasticsearch'), {
      timeoutMs: 2_000,
      intervalMs: 5,
    });
    expect(readiness.report().reason).toBe(
      'Elasticsearch unreachable: ConnectionError: connect ECONNREFUSED 127.0.0.1:1',
    );
    es.answer = 403;
    await waitFor('refused', () => readiness.report().reason?.includes('refuses the worker (403)'), {
      timeoutMs: 2_000,
      intervalMs: 5,
    });
    es.answer = 404; // a server without GET / still answers: reachable
    await waitFor('ready again', () => readiness.report().ready, { timeoutMs: 2_000, intervalMs: 5 });
    // One line per change, however many pings failed in between.
    expect(lines.filter((l) => l.check === 'elasticsearch').map((l) => l.level)).toEqual([30, 40, 30]);
  });

  it('is not ready when no broker has answered for longer than the silence limit', async () => {
    const { clock, consumer, es, readiness } = setup();
    consumer.emit('GROUP_JOIN');
    await waitFor('ready', () => readiness.report().ready, { timeoutMs: 2_000, intervalMs: 5 });
    clock.advance(10_000);
    consumer.emit('REQUEST');
    clock.advance(14_000);
    const pings = es.pings;
    await waitFor('two more probes', () => es.pings >= pings + 2, { timeoutMs: 2_000, intervalMs: 5 });
    expect(readiness.report().ready).toBe(true);
    clock.advance(2_000);
    await waitFor('kafka silent', () => !checkOk(readiness, 'kafka'), { timeoutMs: 2_000, intervalMs: 5 });
    expect(readiness.report().reason).toBe('no answer from any Kafka broker for 16 s');
  });

  it('leaves readiness when the consumer crashes, stops, or the worker is stopping', async () => {
    const { consumer, readiness, feed } = setup();
    consumer.emit('GROUP_JOIN');
    consumer.emit('CRASH', {
      error: new Error('The coordinator is not aware of this member'),
      restart: true,
    });
    expect(readiness.report().checks.joined).toEqual({
      ok: false,
      reason: 'Kafka consumer crashed (The coordinator is not aware of this member); rejoining',
    });
    consumer.emit('GROUP_JOIN');
    expect(checkOk(readiness, 'joined')).toBe(true);
    feed.leaving();
    consumer.emit('GROUP_JOIN'); // a last rejoin while draining does not make it ready again
    expect(readiness.report().checks.joined).toEqual({ ok: false, reason: 'stopping: draining partitions' });
  });

  it('removes its listeners on stop', () => {
    const { consumer, feed } = setup();
    feed.stop();
    expect(consumer.listenerCount()).toBe(0);
  });
});
