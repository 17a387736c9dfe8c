/**
 * Time for the push-back mechanisms: read the time, set and clear timers. Injected so
 * that unit tests drive the mechanisms with a manual clock (test/support/fakes/manual-clock.ts)
 * and production uses the real one; no module reads the time any other way.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences matter). */
  now(): number;
  /** Runs `fn` after `ms`; the timer never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export type TimerHandle = { readonly __timer: unique symbol } | object;

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The error a waiting call rejects with when its signal aborts. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}
