import type { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { stackEnv } from '../../../harness/stack.js';
import { createElasticsearch } from '../../../src/clients/elasticsearch.js';
import { finish, stopGracefully } from '../../faults/scenarios/common.js';
import { type EngineServer, startEngine } from '../../support/engines/engine-server.js';

const engine = { product: 'opensearch', major: 2, version: '2.19.4' } as const;

/** Requests and items the node refused with 429: indexing pressure and the full write queue. */
async function rejections(es: Client): Promise<number> {
  const stats = await es.nodes.stats({ metric: ['indexing_pressure', 'thread_pool'] });
  return Object.values(stats.nodes).reduce((a, n) => {
    const m =
      (n.indexing_pressure as { memory?: { total?: Record<string, number> } } | undefined)?.memory?.total ??
      {};
    return (
      a +
      (m.coordinating_rejections ?? 0) +
      (m.primary_rejections ?? 0) +
      (n.thread_pool?.write?.rejected ?? 0)
    );
  }, 0);
}

/**
 * Writes refused with 429 on OpenSearch: a node with a tiny indexing-pressure limit, one write
 * thread and a write queue of four. Every refused item is retried, none dead-lettered.
 */
describe('OpenSearch 2.19.4 refusing writes with 429 (compatibility run)', () => {
  let server: EngineServer | undefined;
  let es: Client;

  beforeAll(async () => {
    server = await startEngine({
      engine,
      port: 19450,
      settings: {
        'indexing_pressure.memory.limit': '64kb',
        'thread_pool.write.size': 1,
        'thread_pool.write.queue_size': 4,
      },
    });
    es = createElasticsearch({ node: server.url }, { requestTimeout: 60_000 }, engine);
  });
  afterAll(async () => {
    await es?.close();
    await server?.stop();
  });

  it('writes refused with 429: the worker retries until everything lands, with the contract state', async () => {
    const p = await Pipeline.create('compat-429-os2', {
      partitions: 4,
      servers: { ...stackEnv, esNode: server!.url, engine },
      env: { BATCH_MAX: '1000' },
    });
    try {
      const before = await rejections(es);
      const w = p.spawn('w');
      await p.produce(traffic(74, 3_000));
      const report = await finish(p, 'OpenSearch 2 writes refused with 429', [w], {
        waitMs: 120_000,
        messages: 3_000,
        kills: 0,
        outageMs: 0,
        maxRssMb: 700,
      });
      expect(report).toMatchObject({ lost: 0, duplicated: 0 });
      const refused = (await rejections(es)) - before;
      console.info(`OpenSearch 2.19.4: ${refused} rejections (429) while it ran`);
      expect(refused, 'writes OpenSearch refused with 429').toBeGreaterThan(0);
      await stopGracefully(w);
    } finally {
      await p.cleanup();
    }
  });
});
