import { type Client, errors as esErrors } from '@elastic/elasticsearch';
import { type Kafka, logLevel } from 'kafkajs';
import { createElasticsearch, resolveSearchEngine } from '../clients/elasticsearch.js';
import { createKafka, kafkaMisconfiguration } from '../clients/kafka.js';
import { StartupCheckError } from '../clients/startup-check-error.js';
import type { Config } from '../config/config.js';
import { redactUrl } from '../config/redact-url.js';
import { assertKafkajsReadCommitted } from '../kafkajs-patch/read-committed.js';

/**
 * The Kafka and Elasticsearch clients of `rxingest reconcile` and `rxingest dlq`, built by the
 * shared security-aware factories (src/clients: TLS, SASL, API keys, CA files), with the
 * quick give-up a tool run by a person wants. The tools need no Redis: Elasticsearch and the
 * topics are the truth they check.
 */

/** A reason the tool cannot run at all (exit 2): one line, naming the server, never a credential. */
export class CannotRun extends Error {
  override name = 'CannotRun';
}

export function kafkaFor(config: Config, tool: string): Kafka {
  // The tools read read_committed: refuse to run on an unpatched kafkajs that would let
  // records of aborted transactions through.
  assertKafkajsReadCommitted();
  return createKafka(config.kafka, {
    clientId: `${config.kafka.clientId}-${tool}`,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    // A tool run by a person should say quickly that a broker is unreachable.
    retry: { retries: 4, initialRetryTime: 200, maxRetryTime: 3_000 },
  });
}

/** The client in the dialect of the engine ES_NODE is (asked first, unless ES_ENGINE names it). */
export async function elasticsearchFor(config: Config): Promise<Client> {
  const engine = await resolveSearchEngine(config.elasticsearch).catch((err: unknown) => {
    if (!(err instanceof StartupCheckError)) throw err;
    const worded = err.cause === undefined ? undefined : asCannotRun(err.cause, config);
    throw worded instanceof CannotRun ? worded : new CannotRun(err.message);
  });
  return createElasticsearch(
    config.elasticsearch,
    { requestTimeout: config.elasticsearch.requestTimeoutMs, maxRetries: 3 },
    engine,
  );
}

const oneLine = (s: string) => s.replace(/[\r\n]+/g, ' ').slice(0, 300);

/** Turns a connection failure into CannotRun naming the server; anything else passes through. */
export function asCannotRun(err: unknown, config: Config): unknown {
  if (err instanceof CannotRun) return err;
  const e = err as { name?: string; message?: string; cause?: unknown };
  if (err instanceof esErrors.ConnectionError || err instanceof esErrors.TimeoutError) {
    return new CannotRun(
      `cannot reach Elasticsearch at ${redactUrl(config.elasticsearch.node)}: ${oneLine(e.message ?? String(err))}`,
    );
  }
  if (err instanceof esErrors.ResponseError && (err.statusCode === 401 || err.statusCode === 403)) {
    return new CannotRun(
      `Elasticsearch at ${redactUrl(config.elasticsearch.node)} refused the tool (HTTP ${err.statusCode}): check ES_API_KEY / ES_USERNAME`,
    );
  }
  const misconfigured = kafkaMisconfiguration(config.kafka, err);
  if (misconfigured !== undefined) return new CannotRun(misconfigured);
  if (typeof e.name === 'string' && e.name.startsWith('KafkaJS')) {
    const text = `${e.message ?? ''} ${String((e.cause as Error | undefined)?.message ?? '')}`;
    if (/connect|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|timeout|retries exceeded|broker/i.test(text)) {
      return new CannotRun(
        `cannot reach Kafka at ${config.kafka.brokers.join(',')}: ${oneLine(e.message ?? String(err))}`,
      );
    }
  }
  return err;
}
