import { readFileSync } from 'node:fs';
import { Client } from '@elastic/elasticsearch';
import { expect } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { type ExtraEsNode, startExtraEsNode } from '../../../harness/servers/extra-es-node.js';
import { type PrivateKafka, startPrivateKafka } from '../../../harness/servers/private-kafka.js';
import { stackEnv, waitFor } from '../../../harness/stack.js';
import { type PrivateRedis, startPrivateRedis } from '../../support/servers/private-redis.js';
import { finish, type ScenarioReport, type Size, stopGracefully, whenCommitted } from './common.js';

const sleepFor = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Elasticsearch frozen (SIGSTOP) for an outage, later stopped for twice as long, under load. */
export async function elasticsearchOutages(
  size: Size,
  node: ExtraEsNode,
  seed = 73,
): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-es', {
    servers: { ...stackEnv, esNode: node.url },
    env: { ES_REQUEST_TIMEOUT_MS: '5000' },
  });
  try {
    const w = p.spawn('w');
    const producing = p.produce(traffic(seed, size.messages));
    await whenCommitted(p, size.messages * 0.2, size);
    node.freeze();
    const frozenAt = Date.now();
    // What Elasticsearch answered before it froze may still be committed; then nothing more.
    const settled = await waitFor(
      'commits to stop after Elasticsearch froze',
      async () => {
        const before = await p.committedTotal();
        await sleepFor(1_500);
        const after = await p.committedTotal();
        return before === after ? { after } : undefined;
      },
      { timeoutMs: Math.max(4_000, size.outageMs / 2) },
    );
    // The outage is the scenario itself: it lasts what it lasts, whatever the worker does.
    await sleepFor(Math.max(0, frozenAt + size.outageMs - Date.now()));
    expect(await p.committedTotal(), 'nothing committed while Elasticsearch is frozen').toBe(settled.after);
    node.thaw();
    await whenCommitted(p, size.messages * 0.5, size);
    await node.halt();
    await sleepFor(size.outageMs * 2);
    await node.start();
    await producing;
    expect(w.child.exitCode, 'the worker kept running through the outages').toBeNull();
    const report = await finish(p, 'Elasticsearch frozen, then stopped', [w], size, {
      outages: `frozen ${size.outageMs / 1000} s, stopped ${(size.outageMs * 2) / 1000} s`,
    });
    await stopGracefully(w);
    return report;
  } finally {
    node.thaw();
    await p.cleanup();
  }
}

/** A real 429 storm: an Elasticsearch node with a tiny indexing-pressure limit and write queue. */
export async function rejectionStorm(size: Size, seed = 74): Promise<ScenarioReport> {
  const node = await startExtraEsNode({
    settings: {
      // 429s from both: the indexing-pressure limit (whole requests, and items at the
      // primary) and a full write queue (items).
      'indexing_pressure.memory.limit': '256kb',
      'thread_pool.write.size': 1,
      'thread_pool.write.queue_size': 4,
    },
  });
  const p = await Pipeline.create('faults-429', {
    servers: { ...stackEnv, esNode: node.url },
    env: { BATCH_MAX: '1000' },
  });
  try {
    const w = p.spawn('w');
    await p.produce(traffic(seed, size.messages));
    const report = await finish(p, '429 storm', [w], size);
    const stats = await new Client({ node: node.url }).nodes.stats({
      metric: ['indexing_pressure', 'thread_pool'],
    });
    const rejections = Object.values(stats.nodes).reduce((a, n) => {
      const m =
        (n.indexing_pressure as { memory?: { total?: Record<string, number> } } | undefined)?.memory?.total ??
        {};
      const queue = n.thread_pool?.write?.rejected ?? 0;
      return a + (m.coordinating_rejections ?? 0) + (m.primary_rejections ?? 0) + queue;
    }, 0);
    expect(rejections, 'bulk requests Elasticsearch refused with 429').toBeGreaterThan(0);
    await stopGracefully(w);
    return { ...report, outages: `${rejections} rejections (429)` };
  } finally {
    await p.cleanup();
    await node.stop();
  }
}

/** Redis down at start, then frozen, stopped and flushed while the worker ingests. */
export async function redisOutages(size: Size, seed = 75): Promise<ScenarioReport> {
  const redis: PrivateRedis = await startPrivateRedis();
  await redis.stop();
  const p = await Pipeline.create('faults-redis', { servers: { ...stackEnv, redisUrl: redis.url } });
  try {
    const w = p.spawn('w');
    // Paced so that the outages fall in the middle of the run.
    const producing = p.produce(
      traffic(seed, size.messages, { ratePerSec: size.messages / ((size.outageMs * 6) / 1000) }),
    );
    await whenCommitted(p, size.messages * 0.15, size);
    await redis.start();
    await waitFor('the worker using Redis', () => /Redis answers/.test(readFileSync(w.logFile, 'utf8')), {
      timeoutMs: 30_000,
    });
    await waitFor('owner marks in Redis', async () => (await redisKeys(redis)) > 0, { timeoutMs: 30_000 });
    await whenCommitted(p, size.messages * 0.35, size);
    redis.freeze();
    await sleepFor(size.outageMs);
    redis.thaw();
    await whenCommitted(p, size.messages * 0.55, size);
    await redis.stop();
    await sleepFor(size.outageMs);
    await redis.start();
    await whenCommitted(p, size.messages * 0.75, size);
    await redis.flush();
    await producing;
    expect(w.child.exitCode, 'the worker kept running through the outages').toBeNull();
    const report = await finish(p, 'Redis down at start, frozen, stopped, flushed', [w], size, {
      outages: `down at start, frozen ${size.outageMs / 1000} s, stopped ${size.outageMs / 1000} s, flushed`,
    });
    await stopGracefully(w);
    return report;
  } finally {
    await p.cleanup();
    await redis.dispose();
  }
}

async function redisKeys(redis: PrivateRedis): Promise<number> {
  const { Redis } = await import('ioredis');
  const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  try {
    return await r.dbsize();
  } finally {
    r.disconnect();
  }
}

/** The Kafka broker stopped and started again (a clean restart, then a crash) under load. */
export async function brokerRestarts(size: Size, seed = 76): Promise<ScenarioReport> {
  const kafka: PrivateKafka = await startPrivateKafka();
  const p = await Pipeline.create('faults-kafka', { servers: { ...stackEnv, kafkaBrokers: kafka.brokers } });
  try {
    const w = p.spawn('w');
    await p.produce(traffic(seed, size.messages));
    await whenCommitted(p, size.messages * 0.3, size);
    await kafka.stop();
    await sleepFor(Math.min(size.outageMs, 10_000));
    await kafka.start();
    await whenCommitted(p, size.messages * 0.6, size);
    await kafka.kill();
    await kafka.start();
    const report = await finish(p, 'Kafka broker restarted (clean, then killed)', [w], size, {
      outages: 'broker stopped and started, then killed and started',
    });
    await stopGracefully(w);
    return report;
  } finally {
    await p.cleanup();
    await kafka.dispose();
  }
}
