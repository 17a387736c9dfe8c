import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { committedOn, eventsOnly, idsOf, indexedByTopic } from '../../../harness/deployment/topic-checks.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { freePortFrom } from '../../../harness/ports.js';
import { samples, sampleValue, sumOf } from '../../../harness/prometheus-text.js';
import { type ExtraEsNode, startExtraEsNode } from '../../../harness/servers/extra-es-node.js';
import { createTopicsWithLeaders, stackEnv, waitFor } from '../../../harness/stack.js';
import { linesStarting, rssMb, scrape } from '../../../harness/worker/observation.js';
import type { WorkerProcess } from '../../../harness/worker/process.js';
import { HttpFaultProxy } from '../../support/servers/http-fault-proxy.js';

const MESSAGES = 20_000;
const PARTITIONS = 8;

let node: ExtraEsNode;
let p: Pipeline;

beforeAll(async () => {
  node = await startExtraEsNode();
  p = await Pipeline.create('pb-breaker', {
    partitions: PARTITIONS,
    servers: { ...stackEnv, esNode: node.url },
    asShipped: true,
    // No trigger rules: the low topic's events would add triggers the contract check of the
    // high topic does not expect (triggers once is proved by the other end-to-end tests).
    rules: [],
  });
});

afterAll(async () => {
  node?.thaw();
  await p?.admin.deleteTopics({ topics: [p.names.control] }).catch(() => undefined);
  await p?.cleanup();
  await node?.stop();
});

/**
 * A worker at the shipped defaults writing through an HTTP proxy to the extra node, with
 * traffic flowing and some of it committed: `run` then plays a fault through the proxy.
 */
async function throughProxy(
  prefix: string,
  seed: number,
  count: number,
  run: (x: {
    proxy: HttpFaultProxy;
    q: Pipeline;
    w: WorkerProcess;
    port: number;
    producing: Promise<unknown>;
  }) => Promise<void>,
): Promise<void> {
  const proxy = await HttpFaultProxy.to(node.url);
  const q = await Pipeline.create(prefix, {
    partitions: 4,
    servers: { ...stackEnv, esNode: proxy.url },
    asShipped: true,
  });
  try {
    const port = await freePortFrom(9520);
    const w = q.spawn('w', q.controlEnv(port));
    const producing = q.produce(traffic(seed, count, { ratePerSec: 1_000 }));
    await q.waitCommitted(1_500, 120_000);
    await run({ proxy, q, w, port, producing });
    await producing;
    await q.waitForEnd(180_000);
    const d = await q.assertContract(q.expected());
    expect(d.missingEvents + d.wrongProfiles + d.missingTriggers, 'lost').toBe(0);
    expect(d.extraEvents + d.duplicateTriggers, 'duplicated').toBe(0);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  } finally {
    proxy.forward();
    await q.admin.deleteTopics({ topics: [q.names.control] }).catch(() => undefined);
    await q.cleanup();
    await proxy.close();
  }
}

describe('the Elasticsearch circuit breaker in a running worker', () => {
  it('at the shipped defaults, a frozen Elasticsearch opens it within 5 s (one line, the metric at 2, every partition paused, the low topic shed) and it closes within 10 s of SIGCONT, everything indexed once', async () => {
    const low = `${p.names.group}.low`;
    await createTopicsWithLeaders(p.admin, [{ topic: low, numPartitions: 2 }]);
    const port = await freePortFrom(9480);
    const w = p.spawn('w', {
      ...p.controlEnv(port),
      INGEST_TOPICS: `${p.names.topic},${low}`,
      TOPIC_PRIORITIES: `${p.names.topic}:high,${low}:low`,
    });
    // A steady 1,500 records a second for about 20 s: the freeze comes in the middle of it.
    const producing = p.produce(traffic(81, MESSAGES, { ratePerSec: 1_500 }));
    const lowRecords = eventsOnly(82, 2_000, 100);
    const producingLow = p.produce(lowRecords, low);
    await p.waitCommitted(MESSAGES * 0.15, 120_000);
    await waitFor('a first scrape', () => scrape(port), { timeoutMs: 10_000 });
    const before = await scrape(port);
    expect(sampleValue(before, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);

    node.freeze();
    const frozenAt = Date.now();
    const opened = await waitFor(
      'the breaker to open',
      () => linesStarting(w, 'Elasticsearch circuit breaker open')[0],
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const openLatencyMs = opened.time - frozenAt;
    const atOpen = await scrape(port);
    expect(sampleValue(atOpen, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
    const heldByBreaker = samples(atOpen, 'rxingest_partition_paused', { reason: 'breaker' });
    expect(heldByBreaker.filter((s) => s.value === 1).length).toBeGreaterThanOrEqual(PARTITIONS);
    await waitFor('the low topic to be shed', () => linesStarting(w, `shedding topic ${low} (breaker)`)[0], {
      timeoutMs: 5_000,
      intervalMs: 50,
    });
    expect(sampleValue(await scrape(port), 'rxingest_topic_shed', { topic: low })).toBe(1);
    const rssAtOpen = rssMb(w);
    const committedAtOpen = await p.committedTotal();
    const requestsAtOpen = sumOf(atOpen, 'rxingest_es_request_duration_seconds_count');

    // Stay frozen until all the traffic is in Kafka, and longer than the request timeout (30 s)
    // of the requests caught by the freeze, whose retries must wait rather than spin.
    const [sentHigh] = await Promise.all([producing, producingLow]);
    // The contract check reads the high topic; the low topic's events are checked by id below.
    p.setProduced(sentHigh);
    await waitFor('the freeze to outlast the request timeout', () => Date.now() - frozenAt > 35_000, {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    const frozen = await scrape(port);
    const rssFrozen = rssMb(w);
    const inFlight = sumOf(frozen, 'rxingest_in_flight');
    const requestsWhileOpen = sumOf(frozen, 'rxingest_es_request_duration_seconds_count') - requestsAtOpen;
    // Work finished before the freeze may still commit (Kafka is fine); nothing written after it.
    const committedFrozen = await p.committedTotal();
    expect(committedFrozen - committedAtOpen, 'committed while frozen').toBeLessThanOrEqual(3_000);
    expect(
      linesStarting(w, 'Elasticsearch circuit breaker open'),
      'one line for the whole freeze',
    ).toHaveLength(1);
    expect(sampleValue(frozen, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
    expect(rssFrozen - rssAtOpen, 'RSS growth while frozen (MB)').toBeLessThan(100);
    // Only the requests caught by the freeze went out, and their timeouts: no retry spins.
    expect(requestsWhileOpen, 'Elasticsearch requests while the breaker was open').toBeLessThan(100);

    node.thaw();
    const thawedAt = Date.now();
    const closed = await waitFor(
      'the breaker to close',
      () => linesStarting(w, 'Elasticsearch circuit breaker closed')[0],
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const closeAfterThawMs = closed.time - thawedAt;
    await p.waitForEnd(180_000);
    await waitFor(
      'the low topic to catch up',
      async () => (await committedOn(p.admin, p.names.group, low)).atEnd,
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    const after = await scrape(port);
    expect(sampleValue(after, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);
    expect(
      samples(after, 'rxingest_partition_paused', { reason: 'breaker' }).every((s) => s.value === 0),
    ).toBe(true);
    // The low topic's events, checked by id, then set aside: the contract check reads the high topic.
    expect((await indexedByTopic(p.es, p.names.events)).get(low)).toEqual(idsOf(lowRecords));
    await p.es.bulk({
      refresh: true,
      operations: [...idsOf(lowRecords)].map((id) => ({ delete: { _index: p.names.events, _id: id } })),
    });
    const expected = p.expected();
    const d = await p.assertContract(expected);
    const changes = linesStarting(w, 'Elasticsearch circuit breaker').map((l) => l.to);
    expect(w.child.exitCode, 'the worker kept running').toBeNull();
    const report = {
      messages: MESSAGES,
      lowMessages: lowRecords.length,
      lost: d.missingEvents + d.wrongProfiles + d.missingTriggers + d.missingDeadLetters,
      duplicated: d.extraEvents + d.duplicateTriggers + d.duplicateDeadLetters,
      openLatencyMs,
      closeAfterThawMs,
      frozenForMs: thawedAt - frozenAt,
      breakerChanges: changes,
      committedWhileFrozen: committedFrozen - committedAtOpen,
      inFlightWhileFrozen: inFlight,
      requestsWhileOpen,
      maxRssMb: Math.round(w.maxRssMb()),
    };
    process.stdout.write(`[pushback-breaker-defaults] ${JSON.stringify(report)}\n`);
    expect(openLatencyMs, 'breaker open after the freeze (ms)').toBeLessThan(5_000);
    expect(closeAfterThawMs, 'breaker closed after SIGCONT (ms)').toBeLessThan(10_000);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    await p.admin.deleteTopics({ topics: [low] }).catch(() => undefined);
  });

  it('while the breaker is open the low-priority topic is shed; after SIGCONT the high backlog drains before it resumes, nothing lost', async () => {
    const q = await Pipeline.create('pb-brshed', {
      partitions: 4,
      servers: { ...stackEnv, esNode: node.url },
    });
    const high = q.names.topic;
    const low = `${q.names.group}.low`;
    const control = `${q.names.group}.control`;
    try {
      await q.admin.createTopics({ waitForLeaders: true, topics: [{ topic: low, numPartitions: 4 }] });
      const port = await freePortFrom(9500);
      const w = q.spawn('w', {
        INGEST_TOPICS: `${high},${low}`,
        TOPIC_PRIORITIES: `${high}:high,${low}:low`,
        CONTROL_TOPIC: control,
        CONTROL_KEY_PREFIX: `${q.env.REDIS_KEY_PREFIX}control:`,
        HTTP_PORT: String(port),
        HTTP_HOST: '127.0.0.1',
        ES_REQUEST_TIMEOUT_MS: '5000',
        BREAKER_SLOW_CALL_MS: '2000',
        BREAKER_OPEN_MS: '2000',
        BREAKER_OPEN_MAX_MS: '4000',
        // The low topic comes back only once the high one has no lag left.
        SHED_LAG_LOW: '0',
        SHED_MIN_MS: '0',
        LAG_INTERVAL_MS: '1000',
      });
      const highRecords = eventsOnly(93, 6_000, 1_000);
      const lowRecords = eventsOnly(94, 6_000, 1_000);
      const producing = Promise.all([q.produce(highRecords, high), q.produce(lowRecords, low)]);
      await waitFor(
        'the high topic to be ingested',
        async () => (await committedOn(q.admin, q.names.group, high)).total >= 1_000,
        {
          timeoutMs: 120_000,
          intervalMs: 100,
        },
      );

      node.freeze();
      const frozenAt = Date.now();
      const shed = await waitFor(
        'the low topic to be shed for the breaker',
        () => linesStarting(w, `shedding topic ${low} (breaker)`)[0],
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(sampleValue(await scrape(port), 'rxingest_topic_shed', { topic: low })).toBe(1);
      expect(sampleValue(await scrape(port), 'rxingest_topic_shed', { topic: high })).toBe(0);
      await producing;
      node.thaw();
      const thawedAt = Date.now();

      // Poll the high topic's end until the low one resumes: the resume must not come first.
      let highAtEnd: number | undefined;
      const resumed = await waitFor(
        'the low topic to resume',
        async () => {
          if (highAtEnd === undefined && (await committedOn(q.admin, q.names.group, high)).atEnd)
            highAtEnd = Date.now();
          return linesStarting(w, `topic ${low} no longer shed`)[0];
        },
        { timeoutMs: 120_000, intervalMs: 100 },
      );
      await waitFor(
        'the low topic to catch up',
        async () => (await committedOn(q.admin, q.names.group, low)).atEnd,
        {
          timeoutMs: 120_000,
          intervalMs: 250,
        },
      );
      const lowAtEnd = Date.now();
      expect(highAtEnd, 'the high topic drained before the low one resumed').toBeDefined();
      // highAtEnd is polled (100 ms) after the fact; the resume follows a lag sample (1 s) that saw 0.
      expect(resumed.time).toBeGreaterThanOrEqual(highAtEnd! - 1_000);
      const indexed = await indexedByTopic(q.es, q.names.events);
      expect(indexed.get(high)).toEqual(idsOf(highRecords));
      expect(indexed.get(low)).toEqual(idsOf(lowRecords));
      process.stdout.write(
        `[pushback-breaker-shedding] ${JSON.stringify({
          perTopic: 6_000,
          shedAfterFreezeMs: shed.time - frozenAt,
          highDrainedAfterThawMs: highAtEnd! - thawedAt,
          lowResumedAfterThawMs: resumed.time - thawedAt,
          lowCaughtUpAfterThawMs: lowAtEnd - thawedAt,
          indexedHigh: indexed.get(high)?.size,
          indexedLow: indexed.get(low)?.size,
        })}\n`,
      );
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    } finally {
      node.thaw();
      await q.admin.deleteTopics({ topics: [low, control] }).catch(() => undefined);
      await q.cleanup();
    }
  });

  it('at the shipped defaults, a slow Elasticsearch that still answers (every bulk 2 s late) lowers the concurrency limit and never opens it', async () => {
    await throughProxy('pb-brslow', 95, 15_000, async ({ proxy, w, port }) => {
      const limitBefore = sampleValue(await scrape(port), 'rxingest_es_concurrency_limit') ?? Number.NaN;
      expect(limitBefore).toBeGreaterThan(0);
      proxy.delay(2_000, '/_bulk');
      const slowFrom = Date.now();
      // The limit as scraped, each change once: a cut shows as a value below the one before
      // (a cycle of fast answers still in flight may first raise it by one).
      const limits = [limitBefore];
      let worstState = 0;
      const watch = async () => {
        const m = await scrape(port);
        const limit = sampleValue(m, 'rxingest_es_concurrency_limit') ?? Number.NaN;
        if (limit !== limits.at(-1)) limits.push(limit);
        worstState = Math.max(
          worstState,
          sampleValue(m, 'rxingest_breaker_state', { target: 'elasticsearch' }) ?? 2,
        );
      };
      const cut = () => limits.some((l, i) => i > 0 && l < limits[i - 1]!);
      await waitFor('the concurrency limit to be cut', () => watch().then(() => (cut() ? true : undefined)), {
        timeoutMs: 60_000,
        intervalMs: 250,
      });
      const loweredAfterMs = Date.now() - slowFrom;
      // Stay slow for 20 s more, watching the breaker all along.
      const slowEnough = () => watch().then(() => Date.now() - slowFrom > loweredAfterMs + 20_000);
      await waitFor('20 s of a slow cluster', slowEnough, { timeoutMs: 60_000, intervalMs: 250 });
      const bulksWhileSlow = proxy.delayedFor('/_bulk');
      proxy.forward();
      process.stdout.write(
        `[pushback-breaker-slow] ${JSON.stringify({ limits, loweredAfterMs, worstState, bulksWhileSlow })}\n`,
      );
      expect(bulksWhileSlow, 'bulk answers held 2 s').toBeGreaterThan(5);
      expect(cut(), `the limit was cut (${limits.join(' → ')})`).toBe(true);
      expect(worstState, 'the breaker stayed closed').toBe(0);
      expect(linesStarting(w, 'Elasticsearch circuit breaker open')).toEqual([]);
    });
  });

  it('at the shipped defaults, fast refusals (every request answered 503) open it after 5 in a row, and it closes once they stop', async () => {
    await throughProxy('pb-brrefuse', 96, 8_000, async ({ proxy, w, port }) => {
      proxy.refuse(503);
      const refusingFrom = Date.now();
      const opened = await waitFor(
        'the breaker to open',
        () => linesStarting(w, 'Elasticsearch circuit breaker open')[0],
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      expect(opened.reason).toMatch(/5 requests in a row failed|requests failed in the last/);
      expect(sampleValue(await scrape(port), 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
      proxy.forward();
      const forwardFrom = Date.now();
      const closed = await waitFor(
        'the breaker to close',
        () => linesStarting(w, 'Elasticsearch circuit breaker closed')[0],
        { timeoutMs: 90_000, intervalMs: 100 },
      );
      process.stdout.write(
        `[pushback-breaker-refusals] ${JSON.stringify({ openAfterMs: opened.time - refusingFrom, closeAfterMs: closed.time - forwardFrom, refused: proxy.madeFor() })}\n`,
      );
    });
  });
});
