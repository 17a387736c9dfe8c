import { errors as es } from '@elastic/elasticsearch';

/**
 * What the Elasticsearch document store reports about itself (the worker's
 * metrics implement it). Every label value is a short, bounded word.
 */
export interface ElasticsearchStoreObserver {
  /** One request finished (or failed) after `seconds`. */
  request(op: 'bulk' | 'mget', seconds: number): void;
  /** `count` items or requests go round again, for `reason` (connection, timeout, status-429, item-429, conflict…). */
  retries(reason: string, count: number): void;
  /** 409 answers: a known event id, or a profile write that lost a race. */
  conflicts(kind: 'event-exists' | 'profile-version', count: number): void;
}

export const silentObserver: ElasticsearchStoreObserver = {
  request: () => undefined,
  retries: () => undefined,
  conflicts: () => undefined,
};

/** Why a whole request is retried, as a bounded label value. */
export function requestRetryReason(err: unknown): string {
  if (err instanceof es.TimeoutError) return 'timeout';
  if (err instanceof es.NoLivingConnectionsError) return 'no-living-connections';
  if (err instanceof es.ConnectionError) return 'connection';
  if (err instanceof es.ResponseError) return statusReason('status', err.statusCode ?? 0);
  return 'other';
}

/** Why an item of a bulk answer is retried: item-429, item-5xx. */
export const itemRetryReason = (status: number): string => statusReason('item', status);

const statusReason = (prefix: string, status: number) =>
  status === 429 ? `${prefix}-429` : status >= 500 ? `${prefix}-5xx` : `${prefix}-other`;
