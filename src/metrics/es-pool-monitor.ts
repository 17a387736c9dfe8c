import type { Client } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import { SustainedCondition } from './sustained-condition.js';

/** undici's per-pool numbers (`Pool#stats`), one set per Elasticsearch node. */
export interface PoolStats {
  readonly connected: number;
  readonly free: number;
  readonly pending: number;
  readonly queued: number;
  readonly running: number;
  readonly size: number;
}

export interface EsPoolMonitorOptions {
  /** The pool's numbers now, one entry per node. */
  readonly readStats: () => readonly PoolStats[];
  /** Connections each node's pool may open (undici's `connections`). */
  readonly maxConnections: number;
  /** Where the numbers go (WorkerMetrics#setEsPool). */
  readonly publish: (pool: { utilization: number; queued: number; connections: number }) => void;
  readonly log: Logger;
  readonly now?: () => number;
  /** Utilisation at or above this counts as "high" (default 0.8). */
  readonly threshold?: number;
  /** How long it must stay high before one warning (default 60 s). */
  readonly sustainMs?: number;
}

/**
 * Watches the Elasticsearch client's connection pool. A request that waits for
 * a free connection spends its wait inside the request timeout, so a starved
 * pool shows up as timeouts that look like a slow cluster (the field report's
 * "timeout that was really pool starvation"). One warning when utilisation has
 * stayed at or above the threshold for `sustainMs`, one line when it drops back.
 */
export class EsPoolMonitor {
  private readonly high: SustainedCondition;
  private readonly now: () => number;
  private readonly threshold: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: EsPoolMonitorOptions) {
    this.now = o.now ?? Date.now;
    this.threshold = o.threshold ?? 0.8;
    this.high = new SustainedCondition(o.sustainMs ?? 60_000);
  }

  /** Samples every `intervalMs` until stop(); the timer never keeps the process alive. */
  start(intervalMs = 1_000): this {
    this.timer ??= setInterval(() => this.sample(), intervalMs).unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  sample(): void {
    const stats = this.o.readStats();
    const capacity = Math.max(1, stats.length * this.o.maxConnections);
    const busy = stats.reduce((a, s) => a + s.running, 0);
    const queued = stats.reduce((a, s) => a + s.pending, 0);
    const connections = stats.reduce((a, s) => a + s.connected, 0);
    const utilization = Math.min(1, busy / capacity);
    this.o.publish({ utilization, queued, connections });
    const now = this.now();
    const heldMs = this.high.heldFor(now);
    const change = this.high.sample(utilization >= this.threshold, now);
    const fields = { utilization: round(utilization), busy, capacity, queued };
    if (change === 'started') {
      this.o.log.warn(
        { ...fields, forS: Math.round(this.high.heldFor(now) / 1000) },
        `Elasticsearch connection pool above ${this.threshold * 100}% for ${Math.round(this.high.heldFor(now) / 1000)} s: ` +
          'requests wait for a connection inside their timeout, so timeouts now may be pool starvation, ' +
          'not a slow cluster (raise ES_MAX_CONNECTIONS or lower the request concurrency)',
      );
    } else if (change === 'ended') {
      this.o.log.info(
        { ...fields, forS: Math.round(heldMs / 1000) },
        `Elasticsearch connection pool back below ${this.threshold * 100}% after ${Math.round(heldMs / 1000)} s`,
      );
    }
  }
}

/** The undici pools behind an Elasticsearch client (its default UndiciConnection); none for other connection classes. */
export function esPoolStats(client: Client): PoolStats[] {
  const out: PoolStats[] = [];
  for (const c of client.connectionPool.connections) {
    const stats = (c as { pool?: { stats?: PoolStats } }).pool?.stats;
    if (stats) out.push(stats);
  }
  return out;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
