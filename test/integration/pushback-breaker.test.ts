import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traffic } from '../faults/scenarios/common.js';
import { type ExtraEsNode, freePort, startExtraEsNode } from '../support/extra-es-node.js';
import { Pipeline } from '../support/pipeline.js';
import { samples, sampleValue, sumOf } from '../support/prometheus-text.js';
import { stackEnv, waitFor } from '../support/stack.js';
import { committedOn, eventsOnly, idsOf, indexedByTopic } from '../support/topic-checks.js';
import { linesStarting, rssMb, scrape } from '../support/worker-observation.js';

const MESSAGES = 20_000;
const PARTITIONS = 8;
const HIGH_WATER = 2_000;

let node: ExtraEsNode;
let p: Pipeline;
let controlTopic: string;

beforeAll(async () => {
  node = await startExtraEsNode();
  p = await Pipeline.create('pb-breaker', {
    partitions: PARTITIONS,
    servers: { ...stackEnv, esNode: node.url },
  });
  controlTopic = `${p.names.group}.control`;
});

afterAll(async () => {
  node?.thaw();
  await p?.admin.deleteTopics({ topics: [controlTopic] }).catch(() => undefined);
  await p?.cleanup();
  await node?.stop();
});

describe('the Elasticsearch circuit breaker in a running worker', () => {
  it('opens within seconds of a SIGSTOP under load, pauses every partition, holds memory flat, and drains everything after SIGCONT', async () => {
    const port = await freePort(9480);
    const w = p.spawn('w', {
      HTTP_PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      ES_REQUEST_TIMEOUT_MS: '5000',
      BREAKER_SLOW_CALL_MS: '2000',
      BREAKER_OPEN_MS: '2000',
      BREAKER_OPEN_MAX_MS: '8000',
      HIGH_WATER: String(HIGH_WATER),
      CONTROL_TOPIC: controlTopic,
      CONTROL_KEY_PREFIX: `${p.env.REDIS_KEY_PREFIX}control:`,
    });
    // About 20 s of traffic: the freeze comes in the middle of it.
    const producing = p.produce(traffic(81, MESSAGES, { ratePerSec: 1_000 }));
    await p.waitCommitted(MESSAGES * 0.15, 120_000);
    await waitFor('a first scrape', () => scrape(port), { timeoutMs: 10_000 });
    const before = await scrape(port);
    expect(sampleValue(before, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);

    node.freeze();
    const frozenAt = Date.now();
    const opened = await waitFor(
      'the breaker to open',
      () => linesStarting(w, 'Elasticsearch circuit breaker open')[0],
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const openLatencyMs = opened.time - frozenAt;
    const atOpen = await scrape(port);
    expect(sampleValue(atOpen, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
    const heldByBreaker = samples(atOpen, 'rxingest_partition_paused', { reason: 'breaker' });
    expect(heldByBreaker.filter((s) => s.value === 1)).toHaveLength(PARTITIONS);
    const rssAtOpen = rssMb(w);
    const committedAtOpen = await p.committedTotal();
    const requestsAtOpen = sumOf(atOpen, 'rxingest_es_request_duration_seconds_count');

    // Stay frozen until all the traffic is in Kafka and a probe has failed (the breaker
    // opened a second time): the outage outlasts the load and the first probing.
    await producing;
    await waitFor(
      'a failed probe to open the breaker again',
      () => linesStarting(w, 'Elasticsearch circuit breaker open').length >= 2,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    const frozen = await scrape(port);
    const rssFrozen = rssMb(w);
    const inFlight = sumOf(frozen, 'rxingest_in_flight');
    const requestsWhileOpen = sumOf(frozen, 'rxingest_es_request_duration_seconds_count') - requestsAtOpen;
    // Work finished before the freeze may still commit (Kafka is fine); nothing written after it.
    const committedFrozen = await p.committedTotal();
    expect(committedFrozen - committedAtOpen, 'committed while frozen').toBeLessThanOrEqual(2_000);
    expect(inFlight, 'records held in the graphs').toBeLessThanOrEqual(PARTITIONS * HIGH_WATER + 10_000);
    expect(rssFrozen - rssAtOpen, 'RSS growth while frozen (MB)').toBeLessThan(100);
    // Only in-flight requests and a few probes went out: no retry spins against a frozen node.
    expect(requestsWhileOpen, 'Elasticsearch requests while the breaker was open').toBeLessThan(100);

    node.thaw();
    const thawedAt = Date.now();
    const closed = await waitFor(
      'the breaker to close',
      () => linesStarting(w, 'Elasticsearch circuit breaker closed')[0],
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    await p.waitForEnd(180_000);
    const after = await scrape(port);
    expect(sampleValue(after, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);
    expect(
      samples(after, 'rxingest_partition_paused', { reason: 'breaker' }).every((s) => s.value === 0),
    ).toBe(true);
    const expected = p.expected();
    const d = await p.assertContract(expected);
    const changes = linesStarting(w, 'Elasticsearch circuit breaker').map((l) => l.to);
    expect(w.child.exitCode, 'the worker kept running').toBeNull();
    const report = {
      messages: MESSAGES,
      events: expected.events.size,
      profiles: expected.profiles.size,
      triggers: expected.triggers.size,
      lost: d.missingEvents + d.wrongProfiles + d.missingTriggers + d.missingDeadLetters,
      duplicated: d.extraEvents + d.duplicateTriggers + d.duplicateDeadLetters,
      openLatencyMs,
      closeAfterThawMs: closed.time - thawedAt,
      frozenForMs: thawedAt - frozenAt,
      breakerChanges: changes,
      committedAtOpen,
      committedWhileFrozen: committedFrozen - committedAtOpen,
      inFlightWhileFrozen: inFlight,
      requestsWhileOpen,
      rssAtOpenMb: Math.round(rssAtOpen),
      rssFrozenMb: Math.round(rssFrozen),
      maxRssMb: Math.round(w.maxRssMb()),
    };
    process.stdout.write(`[pushback-breaker] ${JSON.stringify(report)}\n`);
    expect(openLatencyMs, 'breaker open after the freeze (ms)').toBeLessThan(15_000);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
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
      const port = await freePort(9500);
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
});
