/**
 * The three classes every failure falls into, decided here and nowhere else:
 *
 * - `bad-data`: this record can never succeed (it is invalid, Elasticsearch refused the
 *   document itself, enrich rejected it): dead-letter it with the reason, count it done.
 * - `transient`: the world is busy, away or misconfigured for a while: 429, 5xx, a missing
 *   or blocked index, a lost privilege, connection trouble, timeouts, Kafka's retriable
 *   errors, Redis unreachable. Retry with the retry policy while the partition waits; a
 *   fault of the destination is never the record's fault (contract, "Output: Elasticsearch").
 * - `unknown`: anything else, a bug included: fail loudly, offsets never past unfinished work.
 *
 * The errors come from @elastic/elasticsearch, kafkajs and ioredis; they are recognised by
 * shape and name, so this module needs none of those libraries.
 */
export type FailureClass = 'bad-data' | 'transient' | 'unknown';

/** Thrown by an `enrich` (or anything on a record's path) to say: this record is bad, dead-letter it. */
export class RecordRejectedError extends Error {
  override name = 'RecordRejectedError';
  readonly badData = true;
}

/** An item error inside a bulk or mget answer: `{ type, reason, caused_by }`. */
export interface ElasticsearchItemError {
  readonly type?: string;
  readonly reason?: string | null;
  readonly caused_by?: ElasticsearchItemError;
}

/** Refusals about the document itself: the same document will always be refused. */
const DOCUMENT_ERROR_TYPES = new Set([
  'mapper_parsing_exception',
  'document_parsing_exception',
  'strict_dynamic_mapping_exception',
  'x_content_parse_exception',
  'parse_exception',
  'json_parse_exception',
  'mapper_exception',
  'document_too_large_exception',
]);
/** `illegal_argument_exception` is both: about a field or value (the document), or about an alias/index (the destination). */
const DOCUMENT_ARGUMENT = /\b(field|fields|term|mapper|mapping|document|value|parse|type)\b/i;
const DESTINATION_ARGUMENT = /\b(alias|write index|closed|block|shard|privilege|read-only|read_only)\b/i;

const OVERSIZED_OPERATION = /operation of size \[\d+\] bytes, which exceeds the maximum allowed limit/;

/**
 * Elasticsearch 9's refusal of a bulk operation larger than the node's
 * `indexing_pressure.memory.max_operation_size` (10% of the heap by default): a 429
 * `es_rejected_execution_exception` "Request contains an operation of size [N] bytes, which
 * exceeds the maximum allowed limit of [M] bytes". Every item of that shard's share of the
 * request gets it, the small ones too, so it names a document only once that document was
 * alone in its shard's share: BulkRequests re-sends such items apart until then.
 */
export function isOversizedOperation(status: number, error: ElasticsearchItemError | undefined): boolean {
  return status === 429 && OVERSIZED_OPERATION.test(error?.reason ?? '');
}

/**
 * A bulk item's failure (status other than 2xx; 409 is decided by the caller since it
 * means "exists" for a create and "lost the race" for a conditional write).
 */
export function classifyItemError(status: number, error: ElasticsearchItemError | undefined): FailureClass {
  // A document too large: over http.max_content_length alone (413), or over the largest
  // operation a node takes (see isOversizedOperation). It will be refused every time.
  if (status === 413 || isOversizedOperation(status, error)) return 'bad-data';
  if (status === 400) {
    const types = errorChain(error).map((e) => e.type ?? '');
    if (types.some((t) => DOCUMENT_ERROR_TYPES.has(t))) return 'bad-data';
    if (types[0] === 'illegal_argument_exception') {
      const reason = errorChain(error)
        .map((e) => e.reason ?? '')
        .join(' ');
      if (DOCUMENT_ARGUMENT.test(reason) && !DESTINATION_ARGUMENT.test(reason)) return 'bad-data';
    }
  }
  // 401/403 (credentials, privileges), 404 (index missing, auto-create off), cluster blocks,
  // unavailable shards, 429, 5xx, and whatever else the destination says: wait and retry.
  return 'transient';
}

const errorChain = (e: ElasticsearchItemError | undefined): ElasticsearchItemError[] => {
  const out: ElasticsearchItemError[] = [];
  for (let x = e; x && out.length < 5; x = x.caused_by) out.push(x);
  return out;
};

const REDIS_TRANSIENT_REPLY =
  /^(LOADING|BUSY|READONLY|OOM|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|NOREPLICAS|MISCONF)\b/;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);
const ES_CONNECTION_ERRORS = new Set([
  'ConnectionError',
  'TimeoutError',
  'NoLivingConnectionsError',
  'RequestAbortedError',
]);
const KAFKA_TRANSIENT_ERRORS = new Set([
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSConnectionError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSConnectionClosedError',
  'KafkaJSBrokerNotFound',
  'KafkaJSLockTimeout',
  // No coordinator while a broker restarts or a coordinator's log is loading: kafkajs gives up
  // with a non-retriable error, but a coordinator comes back (seen: a partition's transaction
  // could not start during a broker restart, and the worker stopped).
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSTopicMetadataNotLoaded',
]);

/** A thrown error from Elasticsearch, Kafka (kafkajs), Redis (ioredis), enrich, or our own code. */
export function classifyError(err: unknown): FailureClass {
  for (const e of causes(err)) {
    const x = e as {
      name?: string;
      message?: string;
      code?: string;
      retriable?: boolean;
      badData?: boolean;
      statusCode?: number;
      meta?: { statusCode?: number };
    };
    if (x.badData === true) return 'bad-data';
    // @elastic/elasticsearch: a whole request answered with an error status.
    if (x.name === 'ResponseError') {
      const status = x.statusCode ?? x.meta?.statusCode ?? 0;
      // 400 on a request we built is our bug, not the destination's fault.
      return status === 400 || status === 0 ? 'unknown' : 'transient';
    }
    if (x.name !== undefined && ES_CONNECTION_ERRORS.has(x.name)) return 'transient';
    // kafkajs marks its protocol errors; its retrier gives up with KafkaJSNumberOfRetriesExceeded.
    if (x.retriable === true) return 'transient';
    if (x.name !== undefined && KAFKA_TRANSIENT_ERRORS.has(x.name)) return 'transient';
    // ioredis: a closed or offline connection, a command timeout, a server that is loading.
    if (x.code !== undefined && NETWORK_CODES.has(x.code)) return 'transient';
    if (x.name === 'ReplyError' && REDIS_TRANSIENT_REPLY.test(x.message ?? '')) return 'transient';
    if (
      x.message === 'Command timed out' ||
      x.message === 'Connection is closed.' ||
      x.message?.startsWith("Stream isn't writeable") ||
      x.name === 'MaxRetriesPerRequestError'
    ) {
      return 'transient';
    }
  }
  return 'unknown';
}

/** The error and what it wraps (kafkajs: `originalError`, standard: `cause`). */
export function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  let e: unknown = err;
  while (e && out.length < 10) {
    out.push(e);
    e = (e as { originalError?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return out;
}

/** Whether a Kafka error, or any error it wraps, says a record or a batch was over the topic's limit. */
export function isTooLarge(err: unknown): boolean {
  return causes(err).some((e) => {
    const t = (e as { type?: unknown }).type;
    return t === 'MESSAGE_TOO_LARGE' || t === 'RECORD_LIST_TOO_LARGE';
  });
}

/** One line about an error, for logs and dead-letter reasons (never the whole object). */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`.replace(/[\r\n]+/g, ' ');
  return String(err);
}
