import { errors as es } from '@elastic/elasticsearch';
import { classifyError } from '../../model/failures.js';
import type { RequestOutcome } from '../../pushback/admission/gates.js';

/** The result part of one bulk item (`{ create: {...} }`, `{ index: {...} }`, …). */
interface ItemResult {
  readonly status: number;
  readonly error?: { readonly type?: string } | null | undefined;
}

/** A bulk item's one result (under `create`, `index`…), without an array of its values per item. */
export function firstResult<T>(item: Partial<Record<string, T>>): T | undefined {
  for (const k in item) return item[k];
  return undefined;
}

/** Item error types that say the destination is not working, not that the document is bad. */
const DESTINATION_FAULTS = new Set([
  'index_not_found_exception',
  'security_exception',
  'cluster_block_exception',
  'unavailable_shards_exception',
  'no_shard_available_action_exception',
]);

const isLoadRefusal = (r: ItemResult) =>
  r.status === 429 || r.error?.type === 'es_rejected_execution_exception' || r.status >= 500;

const isDestinationFault = (r: ItemResult) =>
  r.status >= 500 ||
  r.status === 401 ||
  r.status === 403 ||
  (r.error?.type !== undefined && DESTINATION_FAULTS.has(r.error.type));

/**
 * What an HTTP 200 bulk answer says about the destination: `failed` when every item was
 * refused for a destination fault, `pushback` when any item was refused for load (429,
 * 5xx, es_rejected_execution_exception: the pushback an HTTP-status-only limiter never
 * sees), else `ok`.
 */
export function bulkOutcome(items: readonly Partial<Record<string, ItemResult>>[]): RequestOutcome['result'] {
  let load = false;
  let faults = 0;
  for (const item of items) {
    const r = firstResult(item);
    if (r === undefined) continue;
    if (isLoadRefusal(r)) load = true;
    if (isDestinationFault(r)) faults++;
  }
  if (items.length > 0 && faults === items.length) return 'failed';
  return load ? 'pushback' : 'ok';
}

/**
 * What an mget answer says: `failed` when every document came back with an error (an
 * unavailable shard, a missing index: the destination's), else `ok`.
 */
export function mgetOutcome(docs: readonly object[]): RequestOutcome['result'] {
  if (docs.length === 0) return 'ok';
  return docs.every((d) => 'error' in d && (d as { error?: unknown }).error) ? 'failed' : 'ok';
}

/** What a request that threw says about the destination. */
export function errorOutcome(err: unknown): RequestOutcome['result'] {
  if (err instanceof es.RequestAbortedError || (err as { name?: string })?.name === 'AbortError')
    return 'unsent';
  if (err instanceof es.ResponseError) {
    const status = err.statusCode ?? 0;
    if (status === 429) return 'pushback';
    if (status >= 500 || status === 401 || status === 403) return 'failed';
    const type = (err.body as { error?: { type?: string } } | undefined)?.error?.type;
    if (type !== undefined && DESTINATION_FAULTS.has(type)) return 'failed';
    return 'ok'; // a 4xx about the request itself: the destination works
  }
  return classifyError(err) === 'transient' ? 'failed' : 'ok';
}
