import {
  catchError,
  from,
  map,
  type ObservableInput,
  type OperatorFunction,
  of,
  type SchedulerLike,
} from 'rxjs';
import type { Envelope, IngestMessage } from '../model/message.js';
import { type BatchEntry, decide } from '../model/outcome.js';
import { inOrderPerKey } from './in-order-per-key.js';

/**
 * The pluggable per-message async step (a cache lookup, an API call…): a message, or a
 * promise or observable of one. Default: identity.
 */
export type Enrich = (message: IngestMessage) => ObservableInput<IngestMessage> | IngestMessage;

export const identityEnrich: Enrich = (message) => message;

/**
 * Runs `enrich` for each message, one client at a time in offset order, clients
 * concurrently (`inOrderPerKey` on clientId). A failed or identity-breaking
 * enrich dead-letters that message only (class `rejected`); the client's next
 * message goes on. An enrich that answers synchronously costs no subscription.
 *
 * ```
 * envelopes: -a1-b1-a2-|      a, b: clients; enrich takes 2 frames
 * enrichInOrder
 * output:    ---a1-b1a2-|     a2 starts after a1, b1 runs beside them
 * ```
 */
export function enrichInOrder(
  enrich: Enrich,
  options: { idleCloseMs: number; scheduler?: SchedulerLike; onGroupsChanged?: (open: number) => void },
): OperatorFunction<Envelope, BatchEntry> {
  return inOrderPerKey(
    (envelope: Envelope) => envelope.message.clientId,
    (envelope: Envelope): ObservableInput<BatchEntry> => {
      let out: ObservableInput<IngestMessage> | IngestMessage;
      try {
        out = enrich(envelope.message);
      } catch (err) {
        return [failed(envelope, err)];
      }
      if (!isAsync(out)) return [enriched(envelope, out as IngestMessage)];
      return from(out).pipe(
        map((message) => enriched(envelope, message)),
        catchError((err: unknown) => of(failed(envelope, err))),
      );
    },
    options,
  );
}

function enriched(envelope: Envelope, message: IngestMessage): BatchEntry {
  const m = envelope.message;
  if (message === m) return { envelope };
  if (message?.id !== m.id || message.clientId !== m.clientId || message.type !== m.type) {
    return decide(
      { envelope },
      { kind: 'dead-letter', errorClass: 'rejected', reason: 'enrich changed the id, clientId or type' },
    );
  }
  return { envelope: { ...envelope, message } };
}

function failed(envelope: Envelope, err: unknown): BatchEntry {
  const reason = `enrich failed: ${err instanceof Error ? err.message : String(err)}`;
  return decide({ envelope }, { kind: 'dead-letter', errorClass: 'rejected', reason });
}

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
