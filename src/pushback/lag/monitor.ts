import { type Clock, systemClock, type TimerHandle } from '../clock.js';
import { type LagPolicySettings, nextTopicLag, type TopicLagState } from './policy.js';
import type { TopicLagSample } from './sampler.js';

export interface LagMonitorDeps {
  /** The group's lag now (sampleGroupLag with the worker's admin client). */
  readonly sample: () => Promise<ReadonlyMap<string, TopicLagSample>>;
  /** Where limits go (ProducerLimitPublisher); undefined: tier 2 off, lag is still sampled. */
  readonly limits?: {
    publish(topic: string, ratePerSec: number, lag: number): Promise<unknown>;
    lift(topic: string): Promise<unknown>;
  };
  readonly clock?: Clock;
  /** Every sample and the policy's state: for the shed policy and metrics. */
  readonly onSample?: (
    samples: ReadonlyMap<string, TopicLagSample>,
    states: ReadonlyMap<string, TopicLagState>,
  ) => void;
  /** A topic's limit changed (a number) or was lifted (undefined): one log line, a metric. */
  readonly onLimit?: (topic: string, ratePerSec: number | undefined, state: TopicLagState) => void;
  /** A sample or a publication failed; the monitor goes on at the next interval. */
  readonly onError?: (stage: 'sample' | 'publish', err: unknown) => void;
}

/**
 * The worker's lag monitor: every `intervalMs`, samples the group's lag, runs the tier-2
 * policy per topic, and publishes each limit (refreshing it every interval, so that its
 * TTL only runs out when the worker is gone) or lifts it. One timer at a time; stop()
 * clears it and waits for a running interval.
 */
export class LagMonitor {
  private readonly clock: Clock;
  private readonly topicStates = new Map<string, TopicLagState>();
  private readonly toLift = new Set<string>();
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly settings: { readonly intervalMs: number; readonly policy: LagPolicySettings },
    private readonly deps: LagMonitorDeps,
  ) {
    this.clock = deps.clock ?? systemClock;
  }

  get states(): ReadonlyMap<string, TopicLagState> {
    return this.topicStates;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One interval's work (exposed for tests and for a first sample at start-up). */
  async tick(): Promise<void> {
    let samples: ReadonlyMap<string, TopicLagSample>;
    try {
      samples = await this.deps.sample();
    } catch (err) {
      this.deps.onError?.('sample', err);
      return;
    }
    const now = this.clock.now();
    const work: Promise<unknown>[] = [];
    for (const [topic, sample] of samples) {
      const prev = this.topicStates.get(topic);
      const next = nextTopicLag(prev, sample, now, this.settings.policy);
      this.topicStates.set(topic, next);
      if (next.limitPerSec !== prev?.limitPerSec) this.deps.onLimit?.(topic, next.limitPerSec, next);
      const limits = this.deps.limits;
      if (!limits) continue;
      if (next.limitPerSec !== undefined) {
        this.toLift.delete(topic);
        work.push(limits.publish(topic, next.limitPerSec, next.lag));
      } else if (prev?.limitPerSec !== undefined || this.toLift.has(topic)) {
        this.toLift.add(topic);
        work.push(limits.lift(topic).then(() => this.toLift.delete(topic)));
      }
    }
    this.deps.onSample?.(samples, this.topicStates);
    const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
    if (failed) this.deps.onError?.('publish', (failed as PromiseRejectedResult).reason);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.running = this.tick().finally(() => {
        this.running = undefined;
        this.schedule(this.settings.intervalMs);
      });
    }, ms);
  }
}
