import { errors as es } from '@elastic/elasticsearch';

/**
 * The three classes every failure falls into, decided here and nowhere else:
 *
 * - `bad-data`: this record can never succeed (invalid, refused by Elasticsearch with a
 *   4xx): dead-letter it with the reason, count it done, go on.
 * - `transient`: the world is busy or away (429, 5xx, connection trouble, timeouts, Kafka's
 *   retriable errors, Redis unreachable): retry with capped exponential backoff and jitter;
 *   the partition's intake pauses meanwhile, as its unfinished records reach HIGH_WATER.
 * - `unknown`: anything else, a bug included: fail the worker loudly, with offsets never
 *   past unfinished work.
 */
export type FailureClass = 'bad-data' | 'transient' | 'unknown';

/** An Elasticsearch bulk item's status (409 is decided by the caller: it means different things). */
export function classifyItemStatus(status: number): FailureClass {
  if (status === 429 || status >= 500) return 'transient';
  if (status >= 400) return 'bad-data';
  return 'unknown';
}

const REDIS_TRANSIENT_REPLY = /^(LOADING|BUSY|READONLY|OOM|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|NOREPLICAS)\b/;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

/** A thrown error from Elasticsearch, Kafka (kafkajs) or Redis (ioredis). */
export function classifyError(err: unknown): FailureClass {
  if (err instanceof es.ResponseError) return classifyItemStatus(err.statusCode ?? 0);
  if (
    err instanceof es.ConnectionError ||
    err instanceof es.TimeoutError ||
    err instanceof es.NoLivingConnectionsError
  ) {
    return 'transient';
  }
  for (const e of causes(err)) {
    const x = e as { name?: string; message?: string; code?: string; retriable?: boolean };
    // kafkajs marks its protocol errors; its retrier gives up with this name.
    if (x.retriable === true) return 'transient';
    if (
      x.name === 'KafkaJSNumberOfRetriesExceeded' ||
      x.name === 'KafkaJSConnectionError' ||
      x.name === 'KafkaJSRequestTimeoutError' ||
      x.name === 'KafkaJSConnectionClosedError'
    ) {
      return 'transient';
    }
    // ioredis: a closed or offline connection, a command timeout, a server that is loading.
    if (x.code !== undefined && NETWORK_CODES.has(x.code)) return 'transient';
    if (x.name === 'ReplyError' && REDIS_TRANSIENT_REPLY.test(x.message ?? '')) return 'transient';
    if (
      x.message === 'Command timed out' ||
      x.message === 'Connection is closed.' ||
      x.message?.startsWith("Stream isn't writeable")
    ) {
      return 'transient';
    }
  }
  return 'unknown';
}

/** The error and what it wraps (kafkajs: `originalError`, `cause`). */
export function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  let e: unknown = err;
  while (e && out.length < 10) {
    out.push(e);
    e = (e as { originalError?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return out;
}
