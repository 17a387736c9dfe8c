import type { Redis } from 'ioredis';
import type { Admin, Kafka } from 'kafkajs';
import type { ControlSettings } from '../config/control-settings.js';
import { ensureControlTopic, type ShedDecision, ShedDecisionSubscriber } from '../protocol/shed-channel.js';
import { AdaptiveConcurrencyLimiter } from './admission/adaptive-concurrency.js';
import { type BreakerChange, CircuitBreaker } from './admission/circuit-breaker.js';
import type { CallGate, RequestGate } from './admission/gates.js';
import { AdmissionGate, BreakerCallGate } from './admission/request-gate.js';
import type { AnswersAtAll } from './admission/silence-watch.js';
import { systemClock } from './clock.js';
import { HotClientMonitor, HotClientSampler, RedisHotClientStore } from './hot-clients/monitor.js';
import { LagMonitor } from './lag/monitor.js';
import type { TopicLagState } from './lag/policy.js';
import { ProducerLimitPublisher } from './lag/producer-limits.js';
import { sampleGroupLag, type TopicLagSample } from './lag/sampler.js';
import { type HeapChange, HeapGuard, onMajorGc, v8HeapReader } from './memory/heap-guard.js';
import { type ShedChange, ShedController } from './shedding/controller.js';

/** The longest the Redis breaker stays open between probes (ms), unless BREAKER_OPEN_MS is longer. */
const REDIS_OPEN_MAX_MS = 10_000;

/** What the worker does with each push-back event: log lines, metrics, pausing partitions. */
export interface PushbackHooks {
  /** `rxingest_es_concurrency_limit`. */
  readonly onConcurrencyLimit?: (limit: number) => void;
  /**
   * One log line, `rxingest_breaker_state{target="elasticsearch"}` (BREAKER_STATE_VALUE);
   * pause every partition on `open`, resume them on `half-open` (the records that come in
   * then are the probes) and `closed`.
   */
  readonly onBreakerChange?: (change: BreakerChange) => void;
  /**
   * The Redis breaker changed: one log line, `rxingest_breaker_state{target="redis"}`.
   * Nothing is paused: while it is open the owner marks are simply not used.
   */
  readonly onRedisBreakerChange?: (change: BreakerChange) => void;
  /** The live heap came near V8's limit (hold every partition's intake) or left it: one log line each. */
  readonly onHeapChange?: (change: HeapChange) => void;
  /** Pause the topics' partitions / resume them; one log line each; `rxingest_topic_shed{topic}`. */
  readonly onShedChange?: (change: ShedChange) => void;
  /** The operators' current decisions (for a log line). */
  readonly onManualDecisions?: (decisions: ReadonlyMap<string, ShedDecision>) => void;
  /** The group's lag from the broker, every LAG_INTERVAL_MS (e.g. for `rxingest_consumer_lag`). */
  readonly onLag?: (samples: ReadonlyMap<string, TopicLagSample>) => void;
  /** A producer limit was published or changed (a number) or lifted (undefined). */
  readonly onProducerLimit?: (topic: string, ratePerSec: number | undefined, state: TopicLagState) => void;
  /** A topic's hot set after each interval: its size is `rxingest_hot_clients` (summed over topics). */
  readonly onHotClients?: (
    topic: string,
    hot: ReadonlySet<string>,
    entered: string[],
    left: string[],
  ) => void;
  /** Something failed and is retried on its own (Redis down, the control topic unreadable…): log once per kind. */
  readonly onError?: (what: string, err: unknown) => void;
}

export interface WorkerPushbackOptions {
  readonly settings: ControlSettings;
  readonly group: string;
  readonly topics: readonly string[];
  readonly kafka: Kafka;
  /** A connected admin client (the worker's). */
  readonly admin: Admin;
  /** The worker's Redis client, or undefined: producer limits and hot clients off. */
  readonly redis?: Redis;
  /** Elasticsearch's liveness check: lets the breaker tell a frozen cluster from a slow one. */
  readonly answersAtAll?: AnswersAtAll;
  /** KAFKA_SESSION_TIMEOUT_MS, for the control topic's consumer too (see ShedSubscriberOptions). */
  readonly sessionTimeoutMs?: number;
  readonly hooks?: PushbackHooks;
}

/**
 * Every push-back mechanism of one worker, built from the configuration, behind the few
 * calls the worker makes: `gate` for the Elasticsearch store, `observeClient` from the
 * partition runners' input, `start`/`stop`, and the hooks above for what to do about each event.
 */
export class WorkerPushback {
  readonly limiter: AdaptiveConcurrencyLimiter;
  readonly breaker: CircuitBreaker;
  /** Hand to the Elasticsearch store: one pass per bulk and mget, retries included. */
  readonly gate: RequestGate;
  /**
   * Around Redis (the owner marks): the same breaker and BREAKER_* settings as around
   * Elasticsearch, minus the slow-call rule (the worker's Redis commands time out after
   * 1 s, which counts as a failure by itself) and open for at most 10 s between probes.
   * It never waits and pauses nothing.
   */
  readonly redisBreaker: CircuitBreaker;
  /** Hand to the owner marks (RedisKnownCopies): one pass per MGET and per SET pipeline. */
  readonly redisGate: CallGate;
  readonly shedding: ShedController;
  private readonly lagMonitor: LagMonitor;
  private readonly subscriber: ShedDecisionSubscriber;
  private readonly hotSampler: HotClientSampler | undefined;
  private readonly hotMonitor: HotClientMonitor | undefined;
  /** Made at start, with the count of records in flight it reads. */
  private heap: HeapGuard | undefined;
  private stopWatchingGc: (() => void) | undefined;
  private subscriberStarted = false;

  constructor(private readonly o: WorkerPushbackOptions) {
    const { settings: s, hooks = {} } = o;
    this.limiter = new AdaptiveConcurrencyLimiter(s.concurrency, {
      ...(hooks.onConcurrencyLimit ? { onLimit: hooks.onConcurrencyLimit } : {}),
    });
    this.shedding = new ShedController({ topics: o.topics, ...s.shedding }, (change) =>
      hooks.onShedChange?.(change),
    );
    this.breaker = new CircuitBreaker(s.breaker, {
      ...(o.answersAtAll ? { answersAtAll: o.answersAtAll } : {}),
      onStateChange: (change) => {
        hooks.onBreakerChange?.(change);
        this.shedding.setBreaker(change.to);
      },
    });
    this.gate = new AdmissionGate(this.limiter, this.breaker);
    this.redisBreaker = new CircuitBreaker(
      {
        ...s.breaker,
        slowCallMs: 0,
        // A probe against a Redis still away costs one batch a command timeout at most, and a
        // Redis that is back saves work at once: probe at least every 10 s.
        openMaxMs: Math.min(s.breaker.openMaxMs, Math.max(s.breaker.openMs, REDIS_OPEN_MAX_MS)),
      },
      { ...(hooks.onRedisBreakerChange ? { onStateChange: hooks.onRedisBreakerChange } : {}) },
    );
    this.redisGate = new BreakerCallGate(this.redisBreaker);
    const limits =
      o.redis && s.producerLimits.lagHigh > 0
        ? new ProducerLimitPublisher(o.redis, {
            keyPrefix: s.keyPrefix,
            group: o.group,
            ttlMs: s.producerLimits.ttlMs,
          })
        : undefined;
    this.lagMonitor = new LagMonitor(
      { intervalMs: s.lagIntervalMs, policy: s.producerLimits },
      {
        sample: () => sampleGroupLag(o.admin, o.group, o.topics),
        ...(limits ? { limits } : {}),
        onSample: (samples) => {
          this.shedding.setLag(new Map([...samples].map(([t, x]) => [t, x.lag])));
          hooks.onLag?.(samples);
        },
        ...(hooks.onProducerLimit ? { onLimit: hooks.onProducerLimit } : {}),
        onError: (stage, err) => hooks.onError?.(`lag monitor (${stage})`, err),
      },
    );
    this.subscriber = new ShedDecisionSubscriber(o.kafka, {
      controlTopic: s.shedding.controlTopic,
      group: o.group,
      ...(o.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: o.sessionTimeoutMs }),
      onChange: (decisions) => {
        this.shedding.setManual(new Set(decisions.keys()));
        hooks.onManualDecisions?.(decisions);
      },
      onInvalid: (offset, why) =>
        hooks.onError?.('shed decisions', new Error(`${s.shedding.controlTopic} offset ${offset}: ${why}`)),
    });
    if (o.redis && s.hotClients.enterRatePerSec > 0) {
      this.hotSampler = new HotClientSampler(s.hotClients.sketchSize);
      this.hotMonitor = new HotClientMonitor(s.hotClients, {
        sampler: this.hotSampler,
        store: new RedisHotClientStore(o.redis, {
          keyPrefix: s.keyPrefix,
          intervalMs: s.hotClients.intervalMs,
          spread: s.hotClients.spread,
        }),
        topics: o.topics,
        ...(hooks.onHotClients ? { onHotSet: hooks.onHotClients } : {}),
        onError: (stage, err) => hooks.onError?.(`hot clients (${stage})`, err),
      });
    }
  }

  /** Counts one message of a client (from a partition runner's input, by record key); bounded memory. */
  observeClient(topic: string, clientId: string): void {
    this.hotSampler?.observe(topic, clientId);
  }

  /**
   * Starts everything. Waits (up to `readyTimeoutMs`) until the operators' decisions are
   * read, so that a shed topic is not consumed for a moment at start; the control topic is
   * created when missing. If it cannot be read, the worker goes on without manual decisions
   * (onError says so) rather than not starting. `inFlight` is the count of records taken in
   * and not finished yet, over every partition: what the memory hold waits for.
   */
  async start(inFlight: () => number, readyTimeoutMs = 15_000): Promise<void> {
    const { controlTopic } = this.o.settings.shedding;
    try {
      const warning = await ensureControlTopic(this.o.admin, controlTopic);
      if (warning) this.o.hooks?.onError?.('shed decisions', new Error(warning));
      await this.subscriber.start();
      this.subscriberStarted = true;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, readyTimeoutMs);
      });
      await Promise.race([this.subscriber.ready, late]);
      clearTimeout(timer);
    } catch (err) {
      this.o.hooks?.onError?.('shed decisions', err);
    }
    this.lagMonitor.start();
    this.hotMonitor?.start();
    const { settings, hooks } = this.o;
    this.heap ??= new HeapGuard(settings.heap, {
      clock: systemClock,
      read: v8HeapReader(),
      inFlight,
      onChange: (change) => hooks?.onHeapChange?.(change),
    });
    const heap = this.heap;
    this.stopWatchingGc ??= onMajorGc(() => heap.afterMajorGc());
  }

  async stop(): Promise<void> {
    this.stopWatchingGc?.();
    this.heap?.stop();
    await Promise.allSettled([
      this.lagMonitor.stop(),
      this.hotMonitor?.stop(),
      this.subscriberStarted ? this.subscriber.stop() : undefined,
    ]);
    this.breaker.dispose();
    this.redisBreaker.dispose();
  }
}
