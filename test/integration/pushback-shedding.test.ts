import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planWorkload } from '../../src/generator/workload.js';
import { freePort } from '../support/extra-es-node.js';
import { Pipeline, searchAll } from '../support/pipeline.js';
import { sampleValue, sumOf } from '../support/prometheus-text.js';
import { waitFor } from '../support/stack.js';
import { linesStarting, scrape } from '../support/worker-observation.js';

const run = promisify(execFile);
const PER_TOPIC = 5_000;
const PARTITIONS = 4;

let p: Pipeline;
let low: string;
let controlTopic: string;

beforeAll(async () => {
  p = await Pipeline.create('pb-shed', { partitions: PARTITIONS });
  low = `${p.names.group}.low`;
  controlTopic = `${p.names.group}.control`;
  await p.admin.createTopics({ waitForLeaders: true, topics: [{ topic: low, numPartitions: PARTITIONS }] });
});

afterAll(async () => {
  await p?.admin.deleteTopics({ topics: [low, controlTopic] }).catch(() => undefined);
  await p?.cleanup();
});

/** Events only, no copies or poison: every record is one event document with its origin. */
const events = (seed: number) =>
  planWorkload({
    seed,
    count: PER_TOPIC,
    ratePerSec: 2_500,
    clients: 200,
    profileShare: 0,
    duplicateShare: 0,
    lateDuplicateShare: 0,
    poisonShare: 0,
    hostileKeyShare: 0,
  });

async function committed(topic: string): Promise<{ total: number; atEnd: boolean }> {
  const [ends, offsets] = await Promise.all([
    p.admin.fetchTopicOffsets(topic),
    p.admin.fetchOffsets({ groupId: p.names.group, topics: [topic] }),
  ]);
  const c = new Map(offsets[0]!.partitions.map((x) => [x.partition, Number(x.offset)]));
  return {
    total: [...c.values()].reduce((a, n) => a + Math.max(0, n), 0),
    atEnd: ends.every((e) => c.get(e.partition) === Number(e.high)),
  };
}

/** Event ids in Elasticsearch, by the topic their origin names. */
async function indexedByTopic(): Promise<Map<string, Set<string>>> {
  await p.es.indices.refresh({ index: p.names.events, ignore_unavailable: true });
  const out = new Map<string, Set<string>>();
  for (const [id, doc] of await searchAll(p.es, p.names.events)) {
    const topic = (doc as { origin: { topic: string } }).origin.topic;
    if (!out.has(topic)) out.set(topic, new Set());
    out.get(topic)!.add(id);
  }
  return out;
}

describe('priority shedding in a running worker', () => {
  it('rxingest shed keeps a topic in Kafka while the other is consumed; after unshed it catches up with nothing lost', async () => {
    const high = p.names.topic;
    const port = await freePort(9490);
    const env = {
      ...p.env,
      INGEST_TOPICS: `${high},${low}`,
      TOPIC_PRIORITIES: `${high}:high,${low}:low`,
      CONTROL_TOPIC: controlTopic,
      CONTROL_KEY_PREFIX: `${p.env.REDIS_KEY_PREFIX}control:`,
      LAG_INTERVAL_MS: '1000',
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
    const whileShed = await indexedByTopic();
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
    const after = await indexedByTopic();
    const ids = (rs: typeof highRecords) => new Set(rs.map((r) => r.id!));
    expect(after.get(high)).toEqual(ids(highRecords));
    expect(after.get(low)).toEqual(ids(lowRecords));
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
      })}\n`,
    );
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  });
});
