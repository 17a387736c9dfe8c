import {
  asyncScheduler,
  catchError,
  defer,
  from,
  identity,
  type MonoTypeOperatorFunction,
  map,
  type ObservableInput,
  of,
  type SchedulerLike,
  take,
  throwError,
  throwIfEmpty,
} from 'rxjs';
import { classifyError, describeError } from '../model/failures.js';
import type { IngestMessage } from '../model/message.js';
import { clientOf, decide, type Entry, withMessage } from '../model/outcome.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import { inOrderPerKey } from './in-order-per-key.js';
import { retryWithPolicy } from './retry-with-policy.js';

/**
 * The pluggable per-message async step (a cache lookup, an API call…): a message, or a
 * promise or observable of one. Default: identity. Throw a `RecordRejectedError` (from
 * `model/failures.ts`) to dead-letter a message; any other failure is retried.
 */
export type Enrich = (message: IngestMessage) => ObservableInput<IngestMessage> | IngestMessage;

export const identityEnrich: Enrich = (message) => message;

export interface EnrichInOrderOptions {
  readonly idleCloseMs: number;
  readonly retry: RetryPolicy;
  readonly scheduler?: SchedulerLike;
  readonly onGroupsChanged?: (open: number) => void;
  /** Called for each failed attempt that will be retried. */
  readonly onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * Runs `enrich` for each open message, one client at a time in offset order, clients
 * concurrently (`inOrderPerKey` on clientId); a tombstone that deletes a profile waits in
 * its client's line too, so it cannot overtake that client's updates. Decided entries
 * (poison, window duplicates) have no client to wait for and pass at once.
 *
 * With the identity enrich (the default) nothing waits, so entries pass as they come and no
 * lane opens.
 *
 * Failures follow the failure classes: an enrich that rejects the message (bad data, or
 * an answer that changes its id, clientId or type) dead-letters that message only
 * (class `rejected`); anything else is the enricher's trouble, not the record's, and is
 * retried with the retry policy while the client's later messages wait behind it.
 *
 * ```
 * entries: -a1-b1-a2-x-|      a, b: clients; enrich takes 2 frames; x decided (poison)
 * enrichInOrder
 * output:  ---a1-b1a2x-|      a2 starts after a1, b1 runs beside them, x passes at once
 * ```
 */
export function enrichInOrder(
  enrich: Enrich,
  options: EnrichInOrderOptions,
): MonoTypeOperatorFunction<Entry> {
  const { idleCloseMs, retry, scheduler = asyncScheduler, onGroupsChanged, onRetry } = options;
  // Nothing to wait for: each entry passes at once, so arrival order, which is each client's
  // offset order, is kept without a lane per client (a Map lookup, an array and an idle timer).
  if (enrich === identityEnrich) return identity;
  const retrying = retryWithPolicy<IngestMessage>(retry, {
    scheduler,
    retryable: (err) => classifyError(err) !== 'bad-data' && !(err instanceof IdentityChanged),
    onRetry,
  });
  return inOrderPerKey(
    (entry: Entry) => (entry.outcome === undefined ? clientOf(entry) : undefined),
    (entry: Entry): ObservableInput<Entry> => {
      const message = entry.message;
      if (entry.outcome !== undefined || message === undefined) return [entry];
      let first: ObservableInput<IngestMessage> | IngestMessage | undefined;
      let threw = false;
      let thrown: unknown;
      try {
        first = enrich(message);
      } catch (err) {
        if (classifyError(err) === 'bad-data') return [failed(entry, err)];
        threw = true;
        thrown = err;
      }
      // The answer came back at once: no subscription, no timer.
      if (!threw && !isAsync(first)) return [enriched(entry, first as IngestMessage)];
      let attempt = 0;
      return defer(() => {
        if (attempt++ > 0) return from(asInput(enrich(message)));
        return threw ? throwError(() => thrown) : from(first as ObservableInput<IngestMessage>);
      }).pipe(
        // Exactly one answer: the first counts; none at all is the enricher rejecting the message.
        take(1),
        throwIfEmpty(() => new IdentityChanged('enrich answered no message')),
        map((m) => checkIdentity(message, m)),
        retrying,
        map((m) => enriched(entry, m)),
        catchError((err: unknown) => of(failed(entry, err))),
      );
    },
    { idleCloseMs, scheduler, onGroupsChanged },
  );
}

class IdentityChanged extends Error {
  override name = 'IdentityChanged';
  readonly badData = true;
}

function checkIdentity(before: IngestMessage, after: IngestMessage): IngestMessage {
  if (
    after !== before &&
    (after?.id !== before.id || after.clientId !== before.clientId || after.type !== before.type)
  ) {
    throw new IdentityChanged('enrich changed the id, clientId or type');
  }
  return after;
}

function enriched(entry: Entry, message: IngestMessage): Entry {
  try {
    const m = checkIdentity(entry.message!, message);
    return m === entry.message ? entry : withMessage(entry, m);
  } catch (err) {
    return failed(entry, err);
  }
}

function failed(entry: Entry, err: unknown): Entry {
  const reason =
    err instanceof IdentityChanged
      ? err.message
      : `enrich failed: ${err instanceof Error ? err.message : describeError(err)}`;
  return decide(entry, { kind: 'dead-letter', errorClass: 'rejected', reason });
}

const asInput = (x: ObservableInput<IngestMessage> | IngestMessage): ObservableInput<IngestMessage> =>
  isAsync(x) ? x : of(x as IngestMessage);

/** A promise, an observable or an iterable of messages, rather than a message. */
function isAsync(x: unknown): x is ObservableInput<IngestMessage> {
  return (
    x !== null &&
    typeof x === 'object' &&
    (typeof (x as PromiseLike<unknown>).then === 'function' ||
      typeof (x as { subscribe?: unknown }).subscribe === 'function' ||
      Symbol.iterator in x ||
      Symbol.asyncIterator in x)
  );
}
