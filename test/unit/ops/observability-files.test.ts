import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { GrafanaDashboard } from '../../../scripts/dashboard/grafana-queries.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';

const root = join(import.meta.dirname, '..', '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

interface ComposeService {
  profiles?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, unknown> | string[];
  build?: unknown;
}
const compose = parse(read('docker-compose.yml')) as { services: Record<string, ComposeService> };
const dashboard = JSON.parse(read('ops/grafana/dashboards/rxingest.json')) as GrafanaDashboard & {
  uid: string;
  panels: { datasource: { uid: string }; targets: { expr: string; datasource: { uid: string } }[] }[];
};

const registered = new Set(new WorkerMetrics().registry.getMetricsAsArray().map((m) => m.name));
/** The worker's metric names an expression reads; a histogram's series by the histogram's name. */
const metricsIn = (expr: string) =>
  [...expr.matchAll(/\brxingest_[a-z0-9_]+/g)].map(([name]) =>
    registered.has(name) ? name : name.replace(/_(bucket|sum|count)$/, ''),
  );

describe('docker-compose.yml', () => {
  it('leaves the three servers of `npm run stack:up` without a profile, and everything else behind one', () => {
    const { services } = compose;
    for (const s of ['kafka', 'elasticsearch', 'redis']) expect(services[s]!.profiles, s).toBeUndefined();
    expect(services.worker!.profiles).toEqual(['worker', 'observability']);
    expect(services['kafka-init']!.profiles).toEqual(['worker', 'observability']);
    expect(services.prometheus!.profiles).toEqual(['observability']);
    expect(services.grafana!.profiles).toEqual(['observability']);
  });

  it('runs the worker image against the compose Kafka, Elasticsearch and Redis', () => {
    const { services } = compose;
    const env = services.worker!.environment!;
    expect(services.worker!.build).toBe('.');
    // The broker address the worker uses must be one Kafka advertises to containers.
    expect(services.kafka!.environment!.KAFKA_ADVERTISED_LISTENERS).toContain(
      `INTERNAL://${env.KAFKA_BROKERS}`,
    );
    expect(env.ES_NODE).toBe('http://elasticsearch:9200');
    expect(env.REDIS_URL).toBe('redis://redis:6379');
    expect(env.HTTP_PORT).toBe('9464');
    expect(Object.keys(services.worker!.depends_on as object).sort()).toEqual([
      'elasticsearch',
      'kafka-init',
      'redis',
    ]);
  });

  it('mounts files that exist, and Prometheus scrapes the worker where it listens', () => {
    for (const s of ['prometheus', 'grafana']) {
      for (const v of compose.services[s]!.volumes!)
        expect(existsSync(join(root, v.split(':')[0]!)), v).toBe(true);
    }
    const prom = parse(read('ops/prometheus/prometheus.yml')) as {
      scrape_configs: { metrics_path: string; static_configs: { targets: string[] }[] }[];
    };
    expect(prom.scrape_configs[0]!.metrics_path).toBe('/metrics');
    expect(prom.scrape_configs[0]!.static_configs[0]!.targets).toEqual(['worker:9464']);
  });
});

describe('the Grafana dashboard', () => {
  it('has the panels an operator needs', () => {
    expect(dashboard.panels.map((p) => p.title)).toEqual(
      expect.arrayContaining([
        'Throughput by outcome',
        'Consumer lag per partition',
        'End-to-end latency',
        'In flight per partition',
        'Paused partitions',
        'Dead letters by class',
        'Retries',
        'Breaker state',
        'Elasticsearch concurrency and pool',
        'Redis up',
      ]),
    );
  });

  it('reads only metrics the worker registers', () => {
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets) {
        const names = metricsIn(expr);
        expect(names.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
        for (const name of names) expect(registered.has(name), `${panel.title}: ${name}`).toBe(true);
      }
    }
  });

  it('uses the provisioned datasource', () => {
    const ds = parse(read('ops/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { uid: string; url: string }[];
    };
    expect(ds.datasources[0]!.url).toBe('http://prometheus:9090');
    for (const p of dashboard.panels) {
      expect(p.datasource.uid).toBe(ds.datasources[0]!.uid);
      for (const t of p.targets) expect(t.datasource.uid).toBe(ds.datasources[0]!.uid);
    }
    const provider = parse(read('ops/grafana/provisioning/dashboards/rxingest.yml')) as {
      providers: { options: { path: string } }[];
    };
    const mount = compose.services.grafana!.volumes!.find((v) => v.startsWith('./ops/grafana/dashboards'))!;
    expect(mount.split(':')[1]).toBe(provider.providers[0]!.options.path);
  });
});

describe('the Prometheus alert rules', () => {
  const rules = parse(read('ops/prometheus/alerts.yml')) as {
    groups: { rules: { alert: string; expr: string; for: string; annotations: { summary: string } }[] }[];
  };
  it('are loaded by the Prometheus config and mounted next to it, where its relative path points', () => {
    const prom = parse(read('ops/prometheus/prometheus.yml')) as { rule_files: string[] };
    expect(prom.rule_files).toEqual(['alerts.yml']);
    expect(compose.services.prometheus!.volumes).toEqual(
      expect.arrayContaining([
        './ops/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
        './ops/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro',
      ]),
    );
    expect(compose.services.prometheus!.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
  });

  it('read only metrics the worker registers (or Prometheus’s own `up`), each with a summary', () => {
    const all = rules.groups.flatMap((g) => g.rules);
    expect(all.length).toBeGreaterThan(5);
    for (const r of all) {
      expect(r.annotations.summary, r.alert).toBeTruthy();
      for (const name of metricsIn(r.expr)) expect(registered.has(name), `${r.alert}: ${name}`).toBe(true);
    }
  });
});
