import { type Client, errors as es } from '@elastic/elasticsearch';
import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import type { Readiness, ReadinessCheck } from '../http/readiness.js';

export interface HealthFeedOptions {
  readonly readiness: Readiness;
  readonly es: Client;
  readonly consumer: Consumer;
  readonly log: Logger;
  readonly groupId: string;
  /** How often Elasticsearch is pinged and Kafka's silence checked (default 2 s). */
  readonly probeIntervalMs?: number;
  /** A ping without an answer this long counts as unreachable (default 5 s). */
  readonly probeTimeoutMs?: number;
  /** No answer from any broker this long counts as Kafka unreachable (default 15 s; heartbeats come every ≤ 3 s). */
  readonly kafkaSilenceMs?: number;
  readonly now?: () => number;
}

export interface HealthFeed {
  /** The worker is stopping: no longer ready, whatever the servers say. */
  leaving(): void;
  stop(): void;
}

/**
 * Feeds the readiness model and the connection gauges from what the worker's
 * own clients see: kafkajs's group events and every broker answer to the
 * consumer (no extra Kafka traffic) and a light Elasticsearch ping on a timer.
 * Redis is not part of readiness: the worker ingests without it (RedisHealth
 * feeds `rxingest_redis_up`). Each change of readiness is logged once.
 */
export function feedHealth(o: HealthFeedOptions): HealthFeed {
  const now = o.now ?? Date.now;
  const probeIntervalMs = o.probeIntervalMs ?? 2_000;
  const probeTimeoutMs = o.probeTimeoutMs ?? 5_000;
  const kafkaSilenceMs = o.kafkaSilenceMs ?? 15_000;
  let lastKafkaAnswer: number | undefined;
  let left = false;
  let pinging = false;

  const set = (check: ReadinessCheck, ok: boolean, reason?: string) => {
    if (left && check === 'joined') return;
    if (!o.readiness.set(check, ok, reason)) return;
    const r = o.readiness.report();
    if (ok)
      o.log.info({ check, ready: r.ready }, r.ready ? 'ready' : `${check} ok; not ready yet: ${r.reason}`);
    else o.log.warn({ check, ready: false, reason }, `not ready: ${reason}`);
  };

  const { events } = o.consumer;
  const removers = [
    o.consumer.on(events.GROUP_JOIN, () => {
      lastKafkaAnswer = now();
      set('joined', true);
    }),
    o.consumer.on(events.REQUEST, () => {
      lastKafkaAnswer = now();
    }),
    o.consumer.on(events.CRASH, ({ payload }) =>
      set(
        'joined',
        false,
        `Kafka consumer crashed (${payload.error.message}); ${payload.restart ? 'rejoining' : 'not restarting'}`,
      ),
    ),
    o.consumer.on(events.STOP, () => set('joined', false, `left the consumer group "${o.groupId}"`)),
    o.consumer.on(events.DISCONNECT, () =>
      set('joined', false, `disconnected from the consumer group "${o.groupId}"`),
    ),
  ];

  const probe = async () => {
    const silent = lastKafkaAnswer === undefined ? undefined : now() - lastKafkaAnswer;
    if (silent === undefined) set('kafka', false, 'no answer from Kafka yet');
    else if (silent > kafkaSilenceMs)
      set('kafka', false, `no answer from any Kafka broker for ${Math.round(silent / 1000)} s`);
    else set('kafka', true);

    if (pinging) return;
    pinging = true;
    try {
      await o.es.ping(undefined, { requestTimeout: probeTimeoutMs, maxRetries: 0 });
      set('elasticsearch', true);
    } catch (err) {
      const status = err instanceof es.ResponseError ? (err.statusCode ?? 0) : 0;
      if (status === 401 || status === 403)
        set('elasticsearch', false, `Elasticsearch refuses the worker (${status})`);
      else if (status >= 400 && status < 500) set('elasticsearch', true);
      else set('elasticsearch', false, `Elasticsearch unreachable: ${describe(err)}`);
    } finally {
      pinging = false;
    }
  };
  void probe();
  const timer = setInterval(() => void probe(), probeIntervalMs).unref();

  return {
    leaving() {
      set('joined', false, 'stopping: draining partitions');
      left = true;
    },
    stop() {
      clearInterval(timer);
      for (const remove of removers) remove();
    },
  };
}

const describe = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message}` : String(err);
