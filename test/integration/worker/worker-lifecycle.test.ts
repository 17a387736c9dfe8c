import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, uniqueName, waitFor } from '../../../harness/stack.js';
import { atShippedDefaults, isolatedWorkerEnv, spawnWorker } from '../../../harness/worker/process.js';
import { loadConfig } from '../../../src/config/config.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload } from '../../../src/generator/workload.js';
import type { IngestMessage } from '../../../src/model/message.js';
import { partitionShare } from '../../../src/pushback/intake/marks.js';
import { startWorker } from '../../../src/worker/worker.js';
import { listeningSockets } from '../../support/servers/listening-sockets.js';

const kafka = kafkaClient();
const admin = kafka.admin();
beforeAll(() => admin.connect());
afterAll(() => admin.disconnect());

const workload = (seed: number, count: number) =>
  planWorkload({ seed, count, ratePerSec: 20_000, clients: 100, poisonShare: 0 });

/**
 * The most records of a workload one fetch of `bytes` can carry: its smallest records, counted
 * by key and value alone (on the wire each also has its framing, so a fetch holds fewer).
 */
function mostRecordsIn(bytes: number, seed: number, count: number): number {
  const sizes = workload(seed, count)
    .map((r) => Buffer.byteLength(r.key ?? '') + Buffer.byteLength(r.value ?? ''))
    .sort((a, b) => a - b);
  let n = 0;
  let sum = 0;
  for (const size of sizes) {
    if (sum + size > bytes) break;
    sum += size;
    n++;
  }
  return n;
}

/** A counter's total over all its label values. */
const counted = async (counter: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await counter.get()).values.reduce((sum, v) => sum + v.value, 0);

/** A worker of its own, without an HTTP port. */
const isolatedEnv = (name: string): Record<string, string> => ({
  ...isolatedWorkerEnv(name),
  HTTP_PORT: '0',
});

async function produce(topic: string, count: number, seed: number, maxBatchRecords = 500) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const records = workload(seed, count);
  const result = await runProducer({ topic, records, maxBatchRecords }, { producer });
  await producer.disconnect();
  return result.total;
}

async function committedTotal(topic: string, group: string) {
  const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  return committed[0]!.partitions.reduce((a, p) => a + Math.max(0, Number(p.offset)), 0);
}

describe('worker process', () => {
  it('refuses a bad setting with one line naming the variable, the value and what is expected', async () => {
    const w = spawnWorker({ ...isolatedEnv(uniqueName('badcfg')), BATCH_MAX: 'lots' }, uniqueName('badcfg'));
    expect(await w.exited).toBe(2);
    const lines = readFileSync(w.logFile, 'utf8').trim().split('\n');
    expect(lines).toEqual([
      'rxingest: invalid configuration: BATCH_MAX="lots" is invalid: expected a whole number from 1 to 100000',
    ]);
  });

  it('stops with a clear error when an input topic does not exist', async () => {
    const name = uniqueName('notopic');
    const w = spawnWorker({ ...isolatedEnv(name), KAFKA_TOPIC_WAIT_MS: '1500' }, name);
    expect(await w.exited).toBe(1);
    expect(readFileSync(w.logFile, 'utf8')).toContain(
      `rxingest: could not start: INGEST_TOPICS: topic(s) ${name}.in do not exist`,
    );
  });

  it('commits the end of a burst once its partition goes quiet, long before COMMIT_INTERVAL_MS', async () => {
    const name = uniqueName('quietcommit');
    const env = isolatedEnv(name);
    await createTopics([{ topic: env.INGEST_TOPICS!, numPartitions: 1 }]);
    const total = await produce(env.INGEST_TOPICS!, 1_000, 51);
    // A minute's interval and a count the burst never reaches (1,000 records, every 4,000 at
    // most): within the 30 s below only the quiet commit (BATCH_MAX records committable,
    // nothing new for BATCH_MS) can commit the burst.
    const w = spawnWorker(
      { ...env, COMMIT_INTERVAL_MS: '60000', COMMIT_EVERY: '100000', BATCH_MAX: '100', BATCH_MS: '50' },
      name,
    );
    try {
      await waitFor(
        `all ${total} committed`,
        async () => (await committedTotal(env.INGEST_TOPICS!, env.INGEST_GROUP!)) === total,
        { timeoutMs: 30_000 },
      );
    } finally {
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    }
  });

  it('at the shipped COMMIT_* and BATCH_* settings, commits a burst and then a lone record with nothing new arriving, each within seconds', async () => {
    const name = uniqueName('quietdefaults');
    const env = atShippedDefaults(isolatedEnv(name));
    const topic = env.INGEST_TOPICS!;
    await createTopics([{ topic, numPartitions: 1 }]);
    const w = spawnWorker(env, name);
    const committedWithin = async (total: number) => {
      const from = Date.now();
      await waitFor(
        `${total} committed`,
        async () => (await committedTotal(topic, env.INGEST_GROUP!)) === total,
        {
          timeoutMs: 30_000,
          intervalMs: 50,
        },
      );
      return Date.now() - from;
    };
    try {
      await waitFor('the worker to own its partition', () =>
        readFileSync(w.logFile, 'utf8').includes('partition assigned'),
      );
      // More than BATCH_MAX (500) at once: committable when the partition goes quiet.
      const burst = await produce(topic, 1_000, 52);
      const burstMs = await committedWithin(burst);
      // One record, far fewer than BATCH_MAX: only COMMIT_INTERVAL_MS (500) commits it.
      const lone = await produce(topic, 1, 53);
      const loneMs = await committedWithin(burst + lone);
      process.stdout.write(
        `[quiet commits at defaults] ${JSON.stringify({ burst, burstMs, lone, loneMs })}\n`,
      );
      // Nothing else arrives: a worker that committed only on new input, or only at COMMIT_EVERY
      // (5,000 records), would leave both uncommitted until the wait's end.
      expect(burstMs, 'the burst committed after it was acknowledged').toBeLessThan(5_000);
      expect(loneMs, 'the lone record committed after it was acknowledged').toBeLessThan(5_000);
    } finally {
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    }
  });

  it('waits for an input topic that is created after it starts', async () => {
    const name = uniqueName('latetopic');
    const env = isolatedEnv(name);
    const w = spawnWorker(env, name);
    try {
      await waitFor('the worker to say it waits', () =>
        readFileSync(w.logFile, 'utf8').includes('waiting for them'),
      );
      await createTopics([{ topic: env.INGEST_TOPICS!, numPartitions: 1 }]);
      await produce(env.INGEST_TOPICS!, 100, 41);
      await waitFor(
        'all 100 committed',
        async () => (await committedTotal(env.INGEST_TOPICS!, env.INGEST_GROUP!)) === 100,
        {
          timeoutMs: 60_000,
        },
      );
    } finally {
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    }
  });

  it('exits 0 on a SIGTERM that comes while it is still starting (waiting for its input topic)', async () => {
    const name = uniqueName('earlysigterm');
    const env = isolatedEnv(name);
    const w = spawnWorker({ ...env, KAFKA_TOPIC_WAIT_MS: '60000' }, name);
    try {
      await waitFor('the worker to say it waits', () =>
        readFileSync(w.logFile, 'utf8').includes('waiting for them'),
      );
      w.child.kill('SIGTERM');
      // Its start goes on until the topic is there; then it stops at once instead of ingesting.
      await createTopics([{ topic: env.INGEST_TOPICS!, numPartitions: 1 }]);
      expect(await w.exited).toBe(0);
    } finally {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    }
    const log = readFileSync(w.logFile, 'utf8');
    expect(log).toContain('"starting":true');
    expect(log).toContain('"msg":"stopped"');
  });

  it('drains on SIGTERM: exits 0 with everything it took in committed (HTTP_PORT=0: no port open meanwhile)', async () => {
    const name = uniqueName('sigterm');
    const env = isolatedEnv(name);
    await createTopics([{ topic: env.INGEST_TOPICS!, numPartitions: 4 }]);
    const w = spawnWorker({ ...env, COMMIT_INTERVAL_MS: '1000' }, name);
    // Records keep arriving while the signal lands, so the worker cannot simply be done.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const stopProducing = new AbortController();
    const records = planWorkload({
      seed: 21,
      count: 30_000,
      ratePerSec: 3_000,
      clients: 100,
      poisonShare: 0,
    });
    const producing = runProducer(
      { topic: env.INGEST_TOPICS!, records, signal: stopProducing.signal },
      { producer },
    );
    try {
      await waitFor(
        'some records committed',
        async () => (await committedTotal(env.INGEST_TOPICS!, env.INGEST_GROUP!)) > 2_000,
        {
          timeoutMs: 60_000,
          intervalMs: 50,
        },
      );
      // Ingesting, with HTTP_PORT=0: the HTTP server is off, so the worker listens on nothing.
      expect(listeningSockets(w.child.pid!)).toEqual([]);
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    } finally {
      stopProducing.abort();
      await producing.catch(() => undefined);
      await producer.disconnect();
      // A failed check above must not leave the worker running.
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    }
    const log = readFileSync(w.logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const stopped = log.find((l) => l.msg === 'stopped');
    expect(stopped, 'the worker logs its final counts').toBeDefined();
    const committed = await committedTotal(env.INGEST_TOPICS!, env.INGEST_GROUP!);
    // Everything taken in was finished and committed, and the run was really cut short.
    expect(committed).toBe(stopped.recordsIn);
    expect(committed).toBeLessThan(records.length);
  });
});

describe('backpressure', () => {
  // A lone partition of a worker holds INTAKE_SHARE_PARTITIONS (8) partitions' worth of
  // records, as shipped; with sharing off it holds its own HIGH_WATER.
  it.each([
    {
      what: 'a lone partition at 8 × HIGH_WATER, its share (INTAKE_SHARE_PARTITIONS as shipped)',
      share: undefined,
      count: 40_000,
    },
    {
      what: 'a partition at HIGH_WATER itself with sharing off (INTAKE_SHARE_PARTITIONS=1)',
      share: '1',
      count: 8_000,
    },
  ])(
    'at the shipped HIGH_WATER / LOW_WATER, pauses $what while enrich is slow, and drains afterwards',
    async ({ share, count }) => {
      const name = uniqueName('backpressure');
      const env = isolatedEnv(name);
      await createTopics([{ topic: env.INGEST_TOPICS!, numPartitions: 1 }]);
      // Kafka hands out whole record batches, so keep the producer's batches small too.
      const seed = 31;
      const total = await produce(env.INGEST_TOPICS!, count, seed, 50);
      // HIGH_WATER, LOW_WATER and KAFKA_MAX_BYTES_PER_PARTITION at their defaults.
      const highWater = 2_000 * partitionShare(1, share === undefined ? 8 : Number(share));
      const fetchBytes = 262_144;
      const config = loadConfig({
        ...atShippedDefaults(env),
        LOG_LEVEL: 'warn',
        ...(share === undefined ? {} : { INTAKE_SHARE_PARTITIONS: share }),
      });
      // 1 ms per message, one client at a time per client: far slower than Kafka can deliver.
      const enrich = async (m: IngestMessage) => {
        await new Promise((r) => setTimeout(r, 1));
        return m;
      };
      const worker = await startWorker({ config, log: pino({ level: 'warn' }), enrich });
      const { recordsIn, recordsDone } = worker.metrics;
      let maxInFlight = 0;
      let maxInGraph = 0;
      let sawPaused = false;
      try {
        await waitFor(
          'all records done',
          async () => {
            // Taken in first, finished after: a flush in between can only make this smaller.
            const taken = await counted(recordsIn);
            const finished = await counted(recordsDone);
            maxInGraph = Math.max(maxInGraph, taken - finished);
            const m = await worker.metrics.snapshot();
            maxInFlight = Math.max(maxInFlight, m.inFlight);
            const paused = (await worker.metrics.paused.get()).values.some((v) => v.value === 1);
            sawPaused ||= paused;
            return m.indexed + m.duplicates + m.stale + m.deadLetters >= total;
          },
          { timeoutMs: 120_000, intervalMs: 20 },
        );
      } finally {
        await worker.stop();
      }
      expect(sawPaused).toBe(true);
      // The pause: records in the graph reach the high-water mark and pass it by at most the
      // fetch that took them there. Records finished but not yet durably committed still count
      // as in flight (rxingest_in_flight), up to 4 × HIGH_WATER, so that gauge may go further.
      const oneFetch = mostRecordsIn(fetchBytes, seed, count);
      expect(maxInGraph).toBeLessThan(highWater + oneFetch);
      expect(maxInFlight).toBeGreaterThanOrEqual(highWater);
      expect(maxInFlight).toBeLessThan(4 * highWater + oneFetch);
      expect(await committedTotal(env.INGEST_TOPICS!, env.INGEST_GROUP!)).toBe(total);
    },
    180_000,
  );
});
