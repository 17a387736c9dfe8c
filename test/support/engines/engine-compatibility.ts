import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from '@elastic/elasticsearch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { freePortFrom } from '../../../harness/ports.js';
import { kafkaClient, stackEnv, waitFor } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { linesStarting, scrapedSum } from '../../../harness/worker/observation.js';
import { createElasticsearch } from '../../../src/clients/elasticsearch.js';
import { engineLabel } from '../../../src/clients/search-engine.js';
import { planWorkload, type WorkloadRecord } from '../../../src/generator/workload.js';
import { finish, type Size, stopGracefully } from '../../faults/scenarios/common.js';
import { eventsIndexDeleted } from '../../faults/scenarios/operator-faults.js';
import { runWorkerUntilCaughtUp, pipeline as toolDeployment } from '../deployments/tool-deployment.js';
import { type EngineServer, type EngineSpec, startEngine } from './engine-server.js';

const event = (clientId: string, data: Record<string, unknown>): WorkloadRecord => {
  const id = randomUUID();
  const msg = { id, clientId, type: 'event', name: 'typed', ts: '2026-11-30T12:00:00.000Z', data };
  return { sendAtMs: 0, key: clientId, value: Buffer.from(JSON.stringify(msg)), kind: 'event', id, clientId };
};

/** The destination faults' workload: small, since the compatibility run repeats them on every engine. */
const FAULT_SIZE: Size = { waitMs: 100_000, messages: 2_000, kills: 0, outageMs: 3_000, maxRssMb: 700 };

/**
 * The compatibility run for one engine other than the stack's Elasticsearch 9: starts it on a
 * port of its own, runs a real worker to the contract's state (reconcile agrees), shows what a
 * field whose type changes between messages becomes, replays a dead letter the engine refused,
 * waits out its events index deleted with auto-create off and the engine frozen, and stops it.
 */
export function engineCompatibility(spec: EngineSpec): void {
  const label = engineLabel(spec.engine);
  describe(`${label} (compatibility run)`, () => {
    let server: EngineServer | undefined;
    let es: Client;
    const servers = () => ({ ...stackEnv, esNode: server!.url, engine: spec.engine });

    beforeAll(async () => {
      server = await startEngine(spec);
      es = createElasticsearch({ node: server.url }, { requestTimeout: 60_000 }, spec.engine);
      console.info(`${label} up on ${server.url} in ${server.startMs} ms`);
    });
    afterAll(async () => {
      await es?.close();
      await server?.stop();
    });

    it('a worker that detects the engine ingests a workload to exactly the contract state; reconcile agrees', async () => {
      const p = await Pipeline.create(`compat-${spec.engine.product}${spec.engine.major}`, {
        partitions: 4,
        servers: servers(),
      });
      try {
        const worker = p.spawn('worker');
        const plan = planWorkload({
          seed: 40 + spec.engine.major,
          count: 3_000,
          ratePerSec: 6_000,
          clients: 60,
          duplicateShare: 0.02,
          duplicateDelayMs: { min: 10, max: 300 },
          poisonShare: 0.01,
          hostileKeyShare: 0.02,
          shuffleVersions: 0.1,
        });
        // One field, a number in one message and a string in the next: both must be indexed.
        const typed = [event('c-typed', { typeShift: 7 }), event('c-typed', { typeShift: 'seven' })];
        const last = plan.at(-1)?.sendAtMs ?? 0;
        await p.produce([...plan, ...typed.map((r) => ({ ...r, sendAtMs: last }))]);
        await p.waitForEnd();
        await p.assertContract(p.expected());
        const log = readFileSync(worker.logFile, 'utf8');
        expect(log).toContain(
          `"engine":"${spec.engine.product}","version":"${spec.engine.version}","how":"detected"`,
        );

        const hits = async (query: object) =>
          (await es.search({ index: p.names.events, query, size: 10 })).hits.hits.map((h) => h._id);
        if (spec.engine.product === 'opensearch') {
          // flat_object: every leaf value is a keyword string, whatever its JSON type.
          expect(await hits({ term: { 'data.typeShift': '7' } })).toEqual([typed[0]!.id]);
          expect(await hits({ term: { 'data.typeShift': 'seven' } })).toEqual([typed[1]!.id]);
        } else {
          // Runtime fields: searchable as the type the field first had; the other stays in _source.
          expect(await hits({ term: { 'data.typeShift': 7 } })).toEqual([typed[0]!.id]);
          expect((await es.get({ index: p.names.events, id: typed[1]!.id! }))._source).toMatchObject({
            data: { typeShift: 'seven' },
          });
        }

        const rec = await runCli(['reconcile', '--json'], p.env);
        const report = JSON.parse(rec.stdout);
        expect(report.examples, rec.stdout.slice(0, 2000)).toEqual({});
        expect(rec.code, rec.stderr).toBe(0);
        expect(report.events.missing).toBe(0);
        expect(report.profiles.different).toBe(0);
        worker.child.kill('SIGTERM');
        expect(await worker.exited).toBe(0);
      } finally {
        await p.cleanup();
      }
    });

    it('a document the engine refuses is a dead letter (class rejected); replayed once the index is fixed, it is indexed', async () => {
      const d = await toolDeployment(`compat-dlq-${spec.engine.product}${spec.engine.major}`, {
        partitions: 2,
        extraEnv: { ES_NODE: server!.url },
      });
      const kafka = kafkaClient('compat-dlq');
      const admin = kafka.admin();
      await admin.connect();
      try {
        // An events index made by someone else, where data.n must be a number.
        await es.indices.create({
          index: d.names.events,
          mappings: { properties: { data: { properties: { n: { type: 'long' } } } } },
        });
        const good = event('c-1', { n: 1 });
        const refused = event('c-2', { n: 'not a number' });
        const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
        await producer.connect();
        await producer.send({
          topic: d.names.topic,
          messages: [good, refused].map((r) => ({ key: r.key, value: r.value })),
        });
        await producer.disconnect();
        await runWorkerUntilCaughtUp(admin, d.env, d.names, `${d.names.group}-first`);

        const list = await runCli(['dlq', 'list', '--json'], d.env);
        expect(list.code, list.stderr).toBe(0);
        expect(JSON.parse(list.stdout).byClass).toEqual({ rejected: 1 });

        // Fixed: the index goes, and the worker makes it again with its own mapping.
        await es.indices.delete({ index: d.names.events });
        const replay = await runCli(['dlq', 'replay', '--class', 'rejected'], d.env);
        expect(replay.code, replay.stderr).toBe(0);
        expect(replay.stdout.split('\n')[0]).toBe(`replayed 1 dead letter from ${d.names.dlq} (rejected 1)`);
        await runWorkerUntilCaughtUp(admin, d.env, d.names, `${d.names.group}-second`);
        await es.indices.refresh({ index: d.names.events });
        const found = await es.mget({ index: d.names.events, ids: [refused.id!] });
        expect(found.docs.map((x) => ('found' in x ? x.found : false))).toEqual([true]);
      } finally {
        await admin.disconnect();
        await es.indices
          .delete({ index: [d.names.events, d.names.profiles], ignore_unavailable: true })
          .catch(() => undefined);
      }
    });

    it('the events index deleted with auto-create off: no dead letter, no commit past it; recreated, everything lands', async () => {
      const report = await eventsIndexDeleted(FAULT_SIZE, 78, servers());
      expect(report).toMatchObject({ lost: 0, duplicated: 0 });
    });

    it('frozen (SIGSTOP) under load, at the shipped defaults: the breaker opens within 5 s, and once thawed everything lands', async () => {
      const p = await Pipeline.create(`compat-frozen-${spec.engine.product}${spec.engine.major}`, {
        partitions: 4,
        servers: servers(),
        asShipped: true,
      });
      const port = await freePortFrom(19600);
      try {
        const w = p.spawn('w', p.controlEnv(port));
        await waitFor('the worker ready', () => linesStarting(w, 'ready')[0], { timeoutMs: 60_000 });
        // About 8 s of traffic, some of it committed: the freeze comes in the middle of it (the
        // breaker watches requests that wait; with none in flight there is nothing to open for).
        const producing = p.produce(traffic(90, 8_000, { ratePerSec: 1_000 }));
        await p.waitCommitted(1_000, 60_000);
        await server!.freeze();
        const frozenAt = Date.now();
        try {
          const opened = await waitFor(
            'the breaker to open',
            () => linesStarting(w, 'Elasticsearch circuit breaker open')[0],
            { timeoutMs: 30_000, intervalMs: 50 },
          );
          const openLatencyMs = opened.time - frozenAt;
          console.info(`${label}: breaker open ${openLatencyMs} ms after the freeze`);
          expect(await scrapedSum(port, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(2);
          expect(await p.committedAtEnd(), 'the input not committed past while the engine is frozen').toBe(
            false,
          );
          expect(openLatencyMs, 'breaker open after the freeze (ms)').toBeLessThan(5_000);
          await producing;
        } finally {
          await server!.thaw();
        }
        const report = await finish(p, `${label} frozen`, [w], FAULT_SIZE);
        expect(report).toMatchObject({ lost: 0, duplicated: 0 });
        await stopGracefully(w);
      } finally {
        await server!.thaw();
        await p.cleanup();
      }
    });
  });
}
