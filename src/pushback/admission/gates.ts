/**
 * The gates the stores pass through before each call to a server. Declared here, beside
 * their implementations (request-gate.ts), on a floor below the sinks that use them, so
 * that the sinks import push-back's admission and never the other way round.
 */

/**
 * Admission of every request to a destination: the worker-wide adaptive concurrency limit
 * and the circuit breaker (implemented by `AdmissionGate` in request-gate.ts). A store acquires a
 * pass before each request, first tries and retries alike (so that retries never add load
 * outside the limit), releases it once the answer is in, and sleeps its backoff without
 * holding one. While the breaker is open, acquire() waits: no request goes out, no retry
 * loop spins.
 */
export interface RequestGate {
  /** Resolves when the request may go. Rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<RequestPass>;
}

export interface RequestPass {
  /** Exactly once, when the answer (or the failure) is in; later calls are ignored. */
  release(outcome: RequestOutcome): void;
}

export interface RequestOutcome {
  /**
   * - `ok`: answered, nothing pushed back (409s and refusals of bad documents included).
   * - `pushback`: answered, but load was refused: HTTP 429, or items with 429/5xx or
   *   `es_rejected_execution_exception` inside an HTTP 200 bulk answer.
   * - `failed`: no usable answer: connection error, timeout, 5xx, or every item refused for
   *   a destination fault (missing index, no privilege, blocked index, unavailable shard).
   * - `unsent`: abandoned before an answer (aborted): counts neither way.
   */
  readonly result: 'ok' | 'pushback' | 'failed' | 'unsent';
  /**
   * Whether the round trip says how loaded the destination's writes are (a bulk), so the
   * concurrency limit may learn from it; a read's (an mget) does not. Default true.
   */
  readonly timesWrites?: boolean;
}

/**
 * Admission of the calls to a server the worker can do without (Redis): a circuit breaker
 * that never waits. No pass means "do not call": take the fallback at once (for Redis,
 * "not known to be processed": Elasticsearch decides). Implemented by
 * `BreakerCallGate` in request-gate.ts.
 */
export interface CallGate {
  tryPass(): CallPass | undefined;
}

export interface CallPass {
  /**
   * Exactly once: `ok` the server answered (a refusal such as OOM or READONLY is an
   * answer), `failed` it did not (timeout, connection refused or closed). Later calls are ignored.
   */
  release(result: 'ok' | 'failed'): void;
}
