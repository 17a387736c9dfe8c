import {
  catchError,
  defer,
  map,
  type ObservableInput,
  type OperatorFunction,
  of,
  type SchedulerLike,
} from 'rxjs';
import type { Envelope, IngestMessage } from '../model/message.js';
import { type BatchEntry, decide } from '../model/outcome.js';
import { inOrderPerKey } from './in-order-per-key.js';

/** The pluggable per-message async step (a cache lookup, an API call…). Default: identity. */
export type Enrich = (message: IngestMessage) => ObservableInput<IngestMessage> | IngestMessage;

export const identityEnrich: Enrich = (message) => [message];

/**
 * Runs `enrich` for each message, one client at a time in offset order, clients
 * concurrently (`inOrderPerKey` on clientId). A failed or identity-breaking
 * enrich dead-letters that message only (class `rejected`); the client's next
 * message goes on.
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
    (envelope: Envelope) =>
      defer(() => {
        const out = enrich(envelope.message);
        return isObservableInput(out) ? out : [out];
      }).pipe(
        map((message): BatchEntry => {
          const m = envelope.message;
          if (message.id !== m.id || message.clientId !== m.clientId || message.type !== m.type) {
            return decide(
              { envelope },
              {
                kind: 'dead-letter',
                errorClass: 'rejected',
                reason: 'enrich changed the id, clientId or type',
              },
            );
          }
          return { envelope: message === m ? envelope : { ...envelope, message } };
        }),
        catchError((err: unknown) =>
          of(
            decide(
              { envelope },
              { kind: 'dead-letter', errorClass: 'rejected', reason: `enrich failed: ${errorText(err)}` },
            ),
          ),
        ),
      ),
    options,
  );
}

function isObservableInput(x: unknown): x is ObservableInput<IngestMessage> {
  return (
    x !== null &&
    typeof x === 'object' &&
    (typeof (x as PromiseLike<unknown>).then === 'function' ||
      Symbol.iterator in x ||
      typeof (x as { subscribe?: unknown }).subscribe === 'function')
  );
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
