import { classifyError, describeError } from '../../model/failures.js';
import type { RequestGate, RequestOutcome } from '../../pushback/admission/gates.js';
import { type ElasticsearchStoreObserver, requestRetryReason } from './observer.js';
import { errorOutcome } from './request-outcome.js';

/** A round's verdict on a request: its answer, or why it must be tried again (`reason`: a bounded label). */
export type Attempt<T> =
  | { readonly done: true; readonly value: T }
  | { readonly done: false; readonly why: string; readonly reason: string; readonly cause?: unknown };

/** No admission control: a pass at once, its outcome ignored. */
export const ungated: RequestGate = { acquire: async () => ({ release: () => undefined }) };

export interface RequestContext {
  readonly op: 'bulk' | 'mget';
  readonly gate: RequestGate;
  readonly observer: ElasticsearchStoreObserver;
  readonly signal: AbortSignal | undefined;
}

/**
 * One Elasticsearch request, first try or retry alike: admitted by the gate (which waits
 * while the breaker is open; the retry policy's backoff happens between requests, holding
 * no pass), timed from the moment it goes out, and its outcome handed back to the gate —
 * `judge` reads an answer (item-level 429s inside an HTTP 200 are pushback), a thrown error
 * is classified by errorOutcome. A transient failure (connection, timeout,
 * 429/5xx/401/403/404) is a "not yet"; any other error is thrown.
 */
export async function attemptRequest<T>(
  { op, gate, observer, signal }: RequestContext,
  send: () => Promise<T>,
  judge: (answer: T) => RequestOutcome['result'],
): Promise<Attempt<T>> {
  const pass = await gate.acquire(signal);
  const started = performance.now();
  try {
    const value = await send();
    observer.request(op, (performance.now() - started) / 1000);
    pass.release({ result: judge(value), timesWrites: op === 'bulk' });
    return { done: true, value };
  } catch (err) {
    observer.request(op, (performance.now() - started) / 1000);
    pass.release({ result: errorOutcome(err), timesWrites: op === 'bulk' });
    if (classifyError(err) === 'transient') {
      return {
        done: false,
        why: `${op}: ${describeError(err)}`,
        reason: requestRetryReason(err),
        cause: err,
      };
    }
    throw err;
  }
}
