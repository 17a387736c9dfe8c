import { type Client, errors } from '@elastic/elasticsearch';

/**
 * Whether Elasticsearch answers anything at all within `timeoutMs`: the breaker's liveness
 * check. Any answer below 500 counts — a 401 or a 405 still comes from a running node —
 * while a timeout, a refused connection or a 5xx (a proxy whose upstream is gone, a node
 * with no master) does not.
 *
 * Give it a client of its own (one connection is enough): on the store's client the check
 * could queue behind the very requests that are waiting, and a slow cluster would look frozen.
 */
export function elasticsearchAnswers(es: Client): (timeoutMs: number) => Promise<boolean> {
  return async (timeoutMs) => {
    try {
      await es.ping(undefined, { requestTimeout: timeoutMs, maxRetries: 0 });
      return true;
    } catch (err) {
      return err instanceof errors.ResponseError && (err.statusCode ?? 0) > 0 && err.statusCode! < 500;
    }
  };
}
