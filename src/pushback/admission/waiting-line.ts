import { abortReason } from '../clock.js';

/** A caller waiting for a permit or a ticket; whoever grants it removes the abort listener. */
export interface Waiter<T> {
  readonly resolve: (granted: T) => void;
  readonly reject: (err: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * Joins the end of `waiters` until someone grants it (resolve) or the signal aborts (it
 * leaves the line and rejects with the signal's reason).
 */
export function waitInLine<T>(waiters: Waiter<T>[], signal: AbortSignal | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const waiter: Waiter<T> = {
      resolve,
      reject,
      signal,
      onAbort: () => {
        const i = waiters.indexOf(waiter);
        if (i >= 0) waiters.splice(i, 1);
        reject(abortReason(signal!));
      },
    };
    signal?.addEventListener('abort', waiter.onAbort, { once: true });
    waiters.push(waiter);
  });
}
