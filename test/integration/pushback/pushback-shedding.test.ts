import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { committedOn, eventsOnly, idsOf, indexedByTopic } from '../../../harness/deployment/topic-checks.js';
import { freePortFrom } from '../../../harness/ports.js';
import { sampleValue, sumOf } from '../../../harness/prometheus-text.js';
import { waitFor } from '../../../harness/stack.js';
import { linesStarting, scrape } from '../../../harness/worker/observation.js';

const run = promisify(execFile);
const PER_TOPIC = 5_000;
const PARTITIONS = 4;
/** Just past SHED_LAG_HIGH's default (100,000). */
const SHED_BACKLOG = 105_000;

let p: Pipeline;
let low: string;
let controlTopic: string;

beforeAll(async () => {
  p = await Pipeline.create('pb-shed', { partitions: PARTITIONS, asShipped: true });
  low = `${p.names.group}.low`;
  controlTopic = `${p.names.group}.control`;
  await p.admin.createTopics({ waitForLeaders: true, topics: [{ topic: low, numPartitions: PARTITIONS }] });
});

afterAll(async () => {
  await p?.admin.deleteTopics({ topics: [low, controlTopic] }).catch(() => undefined);
  await p?.cleanup();
});

const events = (seed: number) => eventsOnly(seed, PER_TOPIC, 2_500);
const committed = (topic: string) => committedOn(p.admin, p.names.group, topic);
const indexed = () => indexedByTopic(p.es, p.names.events);

describe('priority shedding in a running worker', () => {
  it('rxingest shed keeps a topic in Kafka while the other is consumed; after unshed it catches up with nothing lost', async () => {
    const high = p.names.topic;
    const port = await freePortFrom(9490);
    const env = {
      ...p.env,
      INGEST_TOPICS: `${high},${low}`,
      TOPIC_PRIORITIES: `${high}:high,${low}:low`,
      CONTROL_TOPIC: controlTopic,
      CONTROL_KEY_PREFIX: `${p.env.REDIS_KEY_PREFIX}control:`,
      // Shedding and the lag readings on their shipped settings. The hot-client settings serve
      // only a side check: every client of this traffic (about 12 msg/s each) counts as hot,
      // so the worker's sampling of its intake is seen end to end (the sketch holds all 200).
      HOT_CLIENT_ENTER_RATE: '5',
      HOT_CLIENT_LEAVE_RATE: '1',
      HOT_CLIENT_INTERVAL_MS: '1000',
      HOT_CLIENT_SKETCH_SIZE: '512',
    };
    const w = p.spawn('w', { ...env, HTTP_PORT: String(port), HTTP_HOST: '127.0.0.1' });
    await waitFor('the worker to start', () => linesStarting(w, 'worker started').length > 0, {
      timeoutMs: 90_000,
    });
    const cli = (...args: string[]) =>
      run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
        env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      });

    const shedAt = Date.now();
    await cli('shed', low);
    const shedLine = await waitFor(
      'the worker to shed the low topic',
      () => linesStarting(w, `shedding topic ${low} (manual)`)[0],
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(sampleValue(await scrape(port), 'rxingest_topic_shed', { topic: low })).toBe(1);

    const highRecords = events(91);
    const lowRecords = events(92);
    await Promise.all([p.produce(highRecords, high), p.produce(lowRecords, low)]);
    const highStarted = Date.now();
    await waitFor('the high topic to be committed to its end', async () => (await committed(high)).atEnd, {
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    const highDrainedMs = Date.now() - highStarted;
    const hot = await waitFor(
      'clients of the high topic to enter the hot set',
      () =>
        linesStarting(w, `hot clients of ${high} changed`).find((l) => (l.entered as string[]).length > 0),
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(linesStarting(w, `hot clients of ${low} changed`), 'the shed topic is not sampled').toEqual([]);
    // The low topic stays in Kafka: its lag (from the broker, exported for owned partitions) is all of it.
    const lowLag = await waitFor(
      'the low topic’s lag to show',
      async () => {
        const lag = sumOf(await scrape(port), 'rxingest_consumer_lag', { topic: low });
        return lag === PER_TOPIC ? lag : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect((await committed(low)).total, 'low topic committed while shed').toBe(0);
    const whileShed = await indexed();
    expect(whileShed.get(high)?.size).toBe(PER_TOPIC);
    expect(whileShed.get(low)?.size ?? 0, 'low-topic events indexed while shed').toBe(0);

    const unshedAt = Date.now();
    await cli('unshed', low);
    await waitFor(
      'the worker to resume the low topic',
      () => linesStarting(w, `topic ${low} no longer shed`)[0],
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    await waitFor('the low topic to catch up', async () => (await committed(low)).atEnd, {
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    const caughtUpMs = Date.now() - unshedAt;
    const after = await indexed();
    expect(after.get(high)).toEqual(idsOf(highRecords));
    expect(after.get(low)).toEqual(idsOf(lowRecords));
    expect(sampleValue(await scrape(port), 'rxingest_topic_shed', { topic: low })).toBe(0);
    process.stdout.write(
      `[pushback-shedding] ${JSON.stringify({
        perTopic: PER_TOPIC,
        shedPropagationMs: shedLine.time - shedAt,
        highDrainedMs,
        lowLagWhileShed: lowLag,
        lowCaughtUpAfterUnshedMs: caughtUpMs,
        indexedHigh: after.get(high)?.size,
        indexedLow: after.get(low)?.size,
        hotClientsSeen: (hot.entered as string[]).length,
      })}\n`,
    );
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  });

  it('at the shipped SHED_* settings: a high-topic backlog of SHED_LAG_HIGH sheds the low topic for at least SHED_MIN_MS, until its lag is down to SHED_LAG_LOW', async () => {
    // SHED_LAG_HIGH 100,000, SHED_LAG_LOW 20,000, SHED_MIN_MS 30 s, lag read every 5 s.
    const q = await Pipeline.create('pb-shedlag', { partitions: PARTITIONS, asShipped: true });
    const lowTopic = `${q.names.group}.low`;
    try {
      await q.admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic: lowTopic, numPartitions: PARTITIONS }],
      });
      const backlog = eventsOnly(93, SHED_BACKLOG, 1_000_000);
      const lowRecords = eventsOnly(94, 2_000, 1_000_000);
      await Promise.all([q.produce(backlog), q.produce(lowRecords, lowTopic)]);
      const high = q.names.topic;
      const port = await freePortFrom(9495);
      const w = q.spawn('w', {
        ...q.controlEnv(port),
        INGEST_TOPICS: `${high},${lowTopic}`,
        TOPIC_PRIORITIES: `${high}:high,${lowTopic}:low`,
      });
      const on = (topic: string) => committedOn(q.admin, q.names.group, topic);
      const samples: { at: number; high: number; low: number }[] = [];
      const sampling = setInterval(() => {
        Promise.all([on(high), on(lowTopic)])
          .then(([h, l]) => samples.push({ at: Date.now(), high: h.total, low: l.total }))
          .catch(() => undefined);
      }, 250);
      let shed: { time: number };
      let resumed: { time: number };
      try {
        shed = await waitFor(
          'the worker to shed the low topic for the high topic’s lag',
          () => linesStarting(w, `shedding topic ${lowTopic} (lag)`)[0],
          { timeoutMs: 90_000, intervalMs: 100 },
        );
        resumed = await waitFor(
          'the worker to resume the low topic',
          () => linesStarting(w, `topic ${lowTopic} no longer shed`)[0],
          { timeoutMs: 180_000, intervalMs: 100 },
        );
        await waitFor(
          'both topics to be committed to their ends',
          async () => (await on(lowTopic)).atEnd && (await on(high)).atEnd,
          {
            timeoutMs: 120_000,
            intervalMs: 250,
          },
        );
      } finally {
        clearInterval(sampling);
      }
      const whileShed = samples.filter((x) => x.at < resumed.time);
      const highAtResume = Math.max(
        0,
        ...samples.filter((x) => x.at <= resumed.time + 1_000).map((x) => x.high),
      );
      const highDrainedAt = samples.find((x) => x.high === SHED_BACKLOG)?.at;
      const indexedNow = await indexedByTopic(q.es, q.names.events);
      process.stdout.write(
        `[pushback-shedding lag] ${JSON.stringify({
          backlog: SHED_BACKLOG,
          shedAfterStartMs: shed.time - (linesStarting(w, 'worker started')[0]?.time ?? shed.time),
          shedForMs: resumed.time - shed.time,
          highDrainedAfterShedMs: highDrainedAt === undefined ? undefined : highDrainedAt - shed.time,
          lowCommittedWhileShed: Math.max(...whileShed.map((x) => x.low)),
          indexedHigh: indexedNow.get(high)?.size,
          indexedLow: indexedNow.get(lowTopic)?.size,
        })}\n`,
      );
      expect(whileShed.length, 'samples while shed').toBeGreaterThan(0);
      expect(Math.max(...whileShed.map((x) => x.low)), 'low topic committed while shed').toBe(0);
      expect(resumed.time - shed.time, 'shed for at least SHED_MIN_MS').toBeGreaterThanOrEqual(30_000);
      // The worker resumed on a lag reading at or below SHED_LAG_LOW: the committed offsets
      // only grow, so the test’s readings within a second after the resume line are at least that far along.
      expect(SHED_BACKLOG - highAtResume, 'high-topic lag at the resume').toBeLessThanOrEqual(20_000);
      expect(indexedNow.get(high)).toEqual(idsOf(backlog));
      expect(indexedNow.get(lowTopic)).toEqual(idsOf(lowRecords));
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    } finally {
      await q.admin.deleteTopics({ topics: [lowTopic] }).catch(() => undefined);
      await q.cleanup();
    }
  }, 300_000);
});
