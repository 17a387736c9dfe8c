import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { freePort } from '../../../harness/ports.js';
import { PrometheusServer, type PromSeries } from '../../../harness/servers/prometheus.js';
import { createTopics, kafkaClient, stackEnv, uniqueName, waitFor } from '../../../harness/stack.js';
import {
  isolatedWorkerEnv,
  spawnWorker,
  type WorkerProcess,
  whileRunning,
} from '../../../harness/worker/process.js';
import { type GrafanaDashboard, grafanaQueries } from '../../../scripts/dashboard/grafana-queries.js';
import { panelData } from '../../../scripts/dashboard/panel-data.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload } from '../../../src/generator/workload.js';
import { TcpProxy } from '../../support/servers/tcp-proxy.js';

/**
 * The Grafana dashboard's queries and the alert rules, evaluated by a real Prometheus (Debian's,
 * on a port of its own, scraping every second) that scrapes a real worker on the local stack
 * while a producer keeps sending to it, poison records among the events, and Elasticsearch's
 * connection is cut for a moment (so that retries are counted too).
 */
const root = process.cwd();
const name = uniqueName('promdash');
const topic = `${name}.in`;
const alertsFile = join(root, 'ops', 'prometheus', 'alerts.yml');
const alerts = (
  parse(readFileSync(alertsFile, 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }
).groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(
  readFileSync(join(root, 'ops', 'grafana', 'dashboards', 'rxingest.json'), 'utf8'),
) as GrafanaDashboard;

let es: TcpProxy;
let worker: WorkerProcess;
let prometheus: PrometheusServer;
let producer: Producer;
let producing: Promise<unknown>;
let start: number;
const stopProducing = new AbortController();

/** A series with at least one number in it (a quantile of no observations is NaN). */
const hasNumbers = (series: readonly PromSeries[]) =>
  series.some((s) => s.values.some(([, v]) => Number.isFinite(v)));

beforeAll(async () => {
  await createTopics([{ topic, numPartitions: 2 }]);
  es = await TcpProxy.to(stackEnv.esNode);
  const port = await freePort();
  worker = spawnWorker(
    {
      ...isolatedWorkerEnv(name),
      ES_NODE: es.url,
      TRIGGER_RULES: join(root, 'examples', 'trigger-rules.json'),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
    },
    `${name}-worker`,
  );
  prometheus = await PrometheusServer.start({
    targets: [`127.0.0.1:${port}`],
    intervalS: 1,
    ruleFiles: [alertsFile],
  });
  start = Date.now() / 1000;
  producer = kafkaClient(`${name}-producer`).producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const records = planWorkload({
    seed: 39,
    ratePerSec: 200,
    durationMs: 150_000,
    clients: 50,
    poisonShare: 0.05,
    poisonKinds: ['invalid-json', 'missing-field', 'wrong-type'],
    baseTimeMs: Date.now(),
  });
  producing = runProducer({ topic, records, signal: stopProducing.signal }, { producer });
  producing.catch(() => {}); // awaited in afterAll; a failure shows as missing data first
});

afterAll(async () => {
  stopProducing.abort();
  await producing?.catch(() => {});
  await producer?.disconnect();
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  await prometheus?.stop();
  await es?.shut();
});

describe('a real Prometheus scraping a real worker', () => {
  it('scrapes it (up is 1) and sees records indexed', async () => {
    const indexed = await whileRunning(
      worker,
      'waiting for Prometheus to see records indexed',
      waitFor(
        'Prometheus to see the worker up with records indexed',
        async () => {
          const up = await prometheus.query('up{job="rxingest"} == 1');
          const done = await prometheus.query('sum(rxingest_records_done_total{outcome="indexed"}) > 0');
          return up.length === 1 && done.length === 1 && done[0]!.values[0]![1];
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      ),
    );
    expect(indexed).toBeGreaterThan(0);
  });

  it('sees Elasticsearch retries go up while Elasticsearch is unreachable', async () => {
    const retries = async () =>
      (await prometheus.query('sum(rxingest_retries_total{target="elasticsearch"})'))[0]?.values[0]?.[1] ?? 0;
    const before = await retries();
    await es.shut();
    try {
      const after = await whileRunning(
        worker,
        'waiting for retries',
        waitFor(
          'Prometheus to see more Elasticsearch retries',
          async () => {
            const now = await retries();
            return now > before && now;
          },
          { timeoutMs: 60_000, intervalMs: 500 },
        ),
      );
      expect(after).toBeGreaterThan(before);
    } finally {
      await es.open();
    }
  });

  it('answers every Grafana panel query, as Grafana sends it, with data', async () => {
    const queries = grafanaQueries(dashboard, { interval: '1m' });
    expect(queries).toHaveLength(dashboard.panels.reduce((n, p) => n + p.targets.length, 0));
    // Rates over [1m] need two scrapes in the window, quantiles need observations in it.
    for (const q of queries) {
      await whileRunning(
        worker,
        `waiting for data from ${q.promql}`,
        waitFor(
          `data from "${q.promql}" (${q.panel})`,
          async () => hasNumbers(await prometheus.query(q.promql)),
          {
            timeoutMs: 60_000,
            intervalMs: 500,
          },
        ),
      );
    }
    // The page's own path: each query over the run with query_range, as record-demo.ts draws it.
    const { lines, answers } = await panelData(prometheus, dashboard, queries, {
      start,
      end: Date.now() / 1000,
      stepS: 1,
    });
    const empty = answers
      .filter((a) => !hasNumbers(a.series))
      .map((a) => `${a.query.panel}: ${a.query.promql}`);
    expect(empty).toEqual([]);
    const drawn = lines.map((panelLines) => panelLines.some((l) => l.points.length > 0));
    expect(drawn).toEqual(dashboard.panels.map(() => true));
  });

  it('parses and evaluates every alert expression, and loads every alert rule healthy', async () => {
    for (const rule of alerts) await expect(prometheus.query(rule.expr), rule.alert).resolves.toBeDefined();
    const loaded = await waitFor(
      'every alert rule evaluated',
      async () => {
        const rules = await prometheus.rules();
        return (
          rules.length === alerts.length && rules.every((r) => !r.lastEvaluation.startsWith('0001')) && rules
        );
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(loaded.map((r) => r.name).sort()).toEqual(alerts.map((a) => a.alert).sort());
    for (const r of loaded) {
      expect(r.type, r.name).toBe('alerting');
      expect([r.name, r.health, r.lastError ?? '']).toEqual([r.name, 'ok', '']);
    }
  });

  it('refuses an expression that is not PromQL, so a broken panel query cannot pass', async () => {
    await expect(prometheus.query('sum by (outcome (rate(rxingest_records_done_total[1m]))')).rejects.toThrow(
      /bad_data/,
    );
  });
});
