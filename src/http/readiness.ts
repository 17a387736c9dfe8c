/** What `/readyz` waits for (contract: joined the group, Elasticsearch and Kafka reachable). */
export type ReadinessCheck = 'joined' | 'elasticsearch' | 'kafka';

export interface CheckState {
  readonly ok: boolean;
  /** Why not, when not ok: one sentence, no secrets. */
  readonly reason?: string;
}

export interface ReadinessReport {
  readonly ready: boolean;
  /** The reasons of the failing checks, joined: what an operator reads first. */
  readonly reason?: string;
  readonly checks: Readonly<Record<ReadinessCheck, CheckState>>;
}

/**
 * Whether the worker is ready, as the worker itself last saw it. The worker
 * feeds it (group joins, its own Elasticsearch and Kafka probes); the HTTP
 * server only reads it, so a `/readyz` request never waits on a server.
 */
export class Readiness {
  private readonly checks: Record<ReadinessCheck, CheckState>;

  constructor(initial: Readonly<Record<ReadinessCheck, string>>) {
    this.checks = {
      joined: { ok: false, reason: initial.joined },
      elasticsearch: { ok: false, reason: initial.elasticsearch },
      kafka: { ok: false, reason: initial.kafka },
    };
  }

  /** Returns true when this changed the check's state (ok ↔ not ok). */
  set(check: ReadinessCheck, ok: boolean, reason?: string): boolean {
    const was = this.checks[check].ok;
    this.checks[check] = ok ? { ok } : { ok, reason: reason ?? `${check} not ok` };
    return was !== ok;
  }

  report(): ReadinessReport {
    const checks = { ...this.checks };
    const failing = Object.values(checks).filter((c) => !c.ok);
    return failing.length === 0
      ? { ready: true, checks }
      : { ready: false, reason: failing.map((c) => c.reason).join('; '), checks };
  }
}
