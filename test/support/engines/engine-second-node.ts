import { readFileSync } from 'node:fs';
import type { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { stackEnv } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { createElasticsearch } from '../../../src/clients/elasticsearch.js';
import { engineLabel } from '../../../src/clients/search-engine.js';
import { planWorkload } from '../../../src/generator/workload.js';
import { finish, stopGracefully } from '../../faults/scenarios/common.js';
import { type EngineServer, type EngineSpec, startEngine } from './engine-server.js';

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

export interface SecondNodeOptions {
  /** TLS with a CA and basic auth as admin (OpenSearch's security plugin, Elasticsearch's x-pack security). */
  readonly secure: boolean;
  /** Also a wrong password and an unknown CA, each refused at start in one line. */
  readonly refusedStarts?: boolean;
}

/**
 * The compatibility run's second node of an engine, with a tiny write capacity (a 64 kB
 * indexing-pressure limit, one write thread, a write queue of four): a 429 storm is retried
 * until everything lands, nothing dead-lettered. Secured, the same start also serves a worker
 * and reconcile with user, password and CA reaching the contract's state.
 */
export function engineSecondNode(spec: Omit<EngineSpec, 'secure' | 'settings'>, options: SecondNodeOptions) {
  const label = engineLabel(spec.engine);
  const tag = `${spec.engine.product}${spec.engine.major}`;
  const secured = options.secure ? ', secured,' : '';
  describe(`${label}${secured} with a tiny write capacity (compatibility run)`, () => {
    let server: EngineServer | undefined;
    let es: Client;
    const credentials = (): Record<string, string> =>
      options.secure
        ? {
            ES_NODE: server!.url,
            ES_USERNAME: 'admin',
            ES_PASSWORD: server!.password!,
            ES_CA_CERT: server!.caFile!,
          }
        : { ES_NODE: server!.url };
    const security = () =>
      options.secure
        ? {
            auth: { username: 'admin', password: server!.password! },
            caCert: readFileSync(server!.caFile!, 'utf8'),
          }
        : {};
    const pipeline = (prefix: string, partitions: number, env: Record<string, string> = {}) =>
      Pipeline.create(prefix, {
        partitions,
        env: { ...credentials(), ...env },
        servers: { ...stackEnv, esNode: server!.url, engine: spec.engine, esSecurity: security() },
      });

    beforeAll(async () => {
      server = await startEngine({
        ...spec,
        secure: options.secure,
        settings: {
          'indexing_pressure.memory.limit': '64kb',
          'thread_pool.write.size': 1,
          'thread_pool.write.queue_size': 4,
        },
      });
      es = createElasticsearch({ node: server.url, ...security() }, { requestTimeout: 60_000 }, spec.engine);
      console.info(`${label}${secured} up on ${server.url} in ${server.startMs} ms`);
    });
    afterAll(async () => {
      await es?.close();
      await server?.stop();
    });

    const withKey = spec.engine.product === 'elasticsearch';
    it.runIf(options.secure)(
      `a worker (${withKey ? 'API key' : 'user and password'} and CA) and reconcile (user, password and CA) reach the contract state`,
      async () => {
        const p = await pipeline(`compat-secured-${tag}`, 2);
        try {
          // On Elasticsearch the worker uses admin's API key instead (made by the stack).
          const worker = withKey
            ? p.spawn('worker', { ES_API_KEY: server!.apiKey!, ES_USERNAME: '', ES_PASSWORD: '' })
            : p.spawn('worker');
          await p.produce(
            planWorkload({ seed: 52, count: 1_000, ratePerSec: 5_000, clients: 40, poisonShare: 0.01 }),
          );
          await p.waitForEnd();
          await p.assertContract(p.expected());
          const rec = await runCli(['reconcile', '--json'], p.env);
          expect(rec.code, rec.stderr).toBe(0);
          worker.child.kill('SIGTERM');
          expect(await worker.exited).toBe(0);
        } finally {
          await p.cleanup();
        }
      },
    );

    it('writes refused with 429: the worker retries until everything lands, with the contract state', async () => {
      const p = await pipeline(`compat-429-${tag}`, 4, { BATCH_MAX: '1000' });
      try {
        const before = await rejections(es);
        const w = p.spawn('w');
        await p.produce(traffic(74, 3_000));
        const report = await finish(p, `${label} writes refused with 429`, [w], {
          waitMs: 120_000,
          messages: 3_000,
          kills: 0,
          outageMs: 0,
          maxRssMb: 700,
        });
        expect(report).toMatchObject({ lost: 0, duplicated: 0 });
        const refused = (await rejections(es)) - before;
        console.info(`${label}: ${refused} rejections (429) while it ran`);
        expect(refused, `writes ${label} refused with 429`).toBeGreaterThan(0);
        await stopGracefully(w);
      } finally {
        await p.cleanup();
      }
    });

    it.runIf(options.refusedStarts)(
      'a wrong password or an unknown CA stops the start with one line naming the server, without the secret',
      async () => {
        const base: Record<string, string> = {
          ...credentials(),
          HTTP_PORT: '0',
          INGEST_TOPICS: 'compat-secured-unused',
        };
        const wrong = await runCli(['worker'], { ...base, ES_PASSWORD: 'Wrong-Passw0rd-x1' });
        expect(wrong.code).not.toBe(0);
        expect(wrong.stderr.trim().split('\n').at(-1)).toBe(
          `rxingest: could not start: Elasticsearch at ${server!.url}: authentication with user "admin" (ES_USERNAME/ES_PASSWORD) failed (401): wrong, expired or revoked credentials`,
        );
        expect(wrong.stdout + wrong.stderr).not.toContain('Wrong-Passw0rd-x1');

        const { ES_CA_CERT: _ca, ...withoutCa } = base;
        const untrusted = await runCli(['worker'], withoutCa);
        expect(untrusted.code).not.toBe(0);
        expect(untrusted.stderr.trim().split('\n').at(-1)).toMatch(
          new RegExp(
            `^rxingest: could not start: Elasticsearch at ${server!.url.replace(/\./g, '\\.')}: TLS: the server's certificate is not trusted .*; set ES_CA_CERT`,
          ),
        );
      },
    );
  });
}
