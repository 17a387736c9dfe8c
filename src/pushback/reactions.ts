import type { Logger } from 'pino';
import { RepeatedFailureLog } from '../log/repeated-failure-log.js';
import type { BreakerState } from './admission/circuit-breaker.js';
import type { PushbackHolds } from './intake/holds.js';
import type { PushbackHooks } from './worker-pushback.js';

/**
 * The series the reactions write, as WorkerMetrics has them: named here because the metrics
 * room sits above push-back (it observes the sinks, which pass push-back's gates).
 */
export interface PushbackMetrics {
  setEsConcurrencyLimit(limit: number): void;
  setBreakerState(target: string, state: BreakerState): void;
  setTopicShed(topic: string, shed: boolean): void;
  setConsumerLag(partition: { readonly topic: string; readonly partition: string }, lag: number): void;
  setHotClients(count: number): void;
}

export interface PushbackReactionsDeps {
  readonly metrics: PushbackMetrics;
  readonly log: Logger;
  /** Also what this worker owns now: it exports the group's lag only for its own partitions. */
  readonly holds: PushbackHolds;
}

/**
 * What the worker does about each push-back event: one log line per change, the
 * contract's metrics, and the holds on intake (all partitions while the breaker is open,
 * a shed topic's partitions). Never a line per request or per sample.
 */
export function pushbackReactions({ metrics, log, holds }: PushbackReactionsDeps): PushbackHooks {
  const hotByTopic = new Map<string, number>();
  const limited = new Set<string>();
  const errors = new Map<string, RepeatedFailureLog>();
  return {
    onConcurrencyLimit: (limit) => metrics.setEsConcurrencyLimit(limit),

    onBreakerChange: ({ from, to, reason, openForMs, untilAnswering }) => {
      metrics.setBreakerState('elasticsearch', to);
      holds.setBreakerOpen(to === 'open');
      const fields = { target: 'elasticsearch', from, to, reason };
      if (to === 'open')
        log.warn(
          untilAnswering
            ? { ...fields, probe: 'when Elasticsearch answers again' }
            : { ...fields, probeInMs: openForMs },
          `Elasticsearch circuit breaker open (${reason}): intake paused on every partition; requests wait, none is sent`,
        );
      else if (to === 'half-open')
        log.info(fields, 'Elasticsearch circuit breaker half-open: intake resumed, probe requests go out');
      else log.info(fields, `Elasticsearch circuit breaker closed (${reason})`);
    },

    onHeapChange: ({ high, usedMb, limitMb, reason }) => {
      holds.setMemoryHigh(high);
      const fields = { usedMb, limitMb, reason };
      if (high)
        log.warn(
          fields,
          `heap near its limit (${usedMb} of ${limitMb} MB alive after a major GC): intake paused on every partition until in-flight work is done`,
        );
      else
        log.info(
          fields,
          reason === 'heap-shrank'
            ? `heap down to ${usedMb} of ${limitMb} MB: intake resumed`
            : `nothing left in flight at ${usedMb} of ${limitMb} MB in use: intake resumed`,
        );
    },

    onRedisBreakerChange: ({ from, to, reason, openForMs }) => {
      metrics.setBreakerState('redis', to);
      const fields = { target: 'redis', from, to, reason };
      if (to === 'open')
        log.warn(
          { ...fields, probeInMs: openForMs },
          `Redis circuit breaker open (${reason}): owner marks not used, Elasticsearch decides every copy; no Redis call until a probe`,
        );
      else if (to === 'half-open') log.info(fields, 'Redis circuit breaker half-open: probe calls go out');
      else log.info(fields, `Redis circuit breaker closed (${reason})`);
    },

    onShedChange: ({ shed, resumed }) => {
      for (const { topic, reason } of shed) {
        metrics.setTopicShed(topic, true);
        holds.setShed(topic, true);
        log.warn(
          { topic, reason },
          `shedding topic ${topic} (${reason}): its partitions are paused, records stay in Kafka`,
        );
      }
      for (const topic of resumed) {
        metrics.setTopicShed(topic, false);
        holds.setShed(topic, false);
        log.info({ topic }, `topic ${topic} no longer shed: consuming it again`);
      }
    },

    onManualDecisions: (decisions) =>
      log.info(
        { shedByHand: [...decisions.values()].map(({ topic, by, at }) => ({ topic, by, at })) },
        decisions.size === 0 ? 'no topic shed by hand' : 'topics shed by hand (rxingest shed)',
      ),

    onLag: (samples) => {
      for (const [topic, sample] of samples)
        for (const p of sample.partitions)
          if (holds.owns(topic, p.partition))
            metrics.setConsumerLag({ topic, partition: String(p.partition) }, p.lag);
    },

    // One line when a topic's producers are first limited and one when the limit is lifted;
    // the limit follows the drain rate every interval in between (debug).
    onProducerLimit: (topic, ratePerSec, state) => {
      const fields = { topic, ratePerSec, lag: state.lag };
      if (ratePerSec === undefined) {
        limited.delete(topic);
        log.info(fields, `producer limit on ${topic} lifted (lag ${state.lag})`);
        return;
      }
      const rate = Math.round(ratePerSec);
      if (limited.has(topic)) log.debug(fields, `producer limit on ${topic} now ${rate} messages/s`);
      else log.info(fields, `producers of ${topic} limited to ${rate} messages/s (lag ${state.lag})`);
      limited.add(topic);
    },

    onHotClients: (topic, hot, entered, left) => {
      hotByTopic.set(topic, hot.size);
      metrics.setHotClients([...hotByTopic.values()].reduce((a, n) => a + n, 0));
      if (entered.length > 0 || left.length > 0)
        log.info({ topic, entered, left, hot: hot.size }, `hot clients of ${topic} changed`);
    },

    onError: (what, err) => {
      let f = errors.get(what);
      if (f === undefined) {
        f = new RepeatedFailureLog(log, { what });
        errors.set(what, f);
      }
      f.failure(err);
    },
  };
}
