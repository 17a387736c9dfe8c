import type { Logger } from 'pino';

export interface RepeatedFailureLogOptions {
  /** What is failing, as the start of a sentence: "Elasticsearch requests", "Redis claims". */
  readonly what: string;
  /** How often a summary line is written while the failure lasts (default 60 s). */
  readonly summaryEveryMs?: number;
  readonly now?: () => number;
}

/**
 * Logs a failure that repeats (a retry loop against a server that is away) as
 * state changes and summaries instead of one line per retry:
 *
 * - the first failure after success: one `warn` with the error;
 * - a failure for another reason than the last one (timeout → 503): one `warn`;
 * - while it lasts, at most one `warn` summary per `summaryEveryMs`
 *   ("Elasticsearch requests failing: 1,234 retries in the last 60 s");
 * - the first success afterwards: one `info` with the totals.
 *
 * Summaries are written by the next failure once the period has passed (no
 * timer to stop), so the period a summary covers is at least `summaryEveryMs`
 * and says how long it really was. One instance per thing that fails, shared
 * by everything that retries against it (e.g. every partition's bulk requests).
 */
export class RepeatedFailureLog {
  private readonly now: () => number;
  private readonly summaryEveryMs: number;
  private failingSince: number | undefined;
  private total = 0;
  private windowStart = 0;
  private windowCount = 0;
  private lastReason = '';

  constructor(
    private readonly log: Logger,
    private readonly options: RepeatedFailureLogOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.summaryEveryMs = options.summaryEveryMs ?? 60_000;
  }

  get failing(): boolean {
    return this.failingSince !== undefined;
  }

  /**
   * One failed attempt. `fields` go on the lines this call writes (never secrets);
   * `reason` is what tells one kind of failure from another (default: the error's name and code).
   */
  failure(err: unknown, fields: Record<string, unknown> = {}, reason = failureReason(err)): void {
    const now = this.now();
    const what = this.options.what;
    this.total++;
    if (this.failingSince === undefined) {
      this.failingSince = now;
      this.windowStart = now;
      this.windowCount = 1;
      this.lastReason = reason;
      this.log.warn(
        { ...fields, state: 'failing', err: describe(err) },
        `${what} failing; retrying with backoff (repeats are summarised every ${Math.round(this.summaryEveryMs / 1000)} s)`,
      );
      return;
    }
    this.windowCount++;
    if (reason !== this.lastReason) {
      this.lastReason = reason;
      this.log.warn(
        { ...fields, state: 'failing', err: describe(err) },
        `${what} still failing, now: ${reason}`,
      );
    }
    if (now - this.windowStart >= this.summaryEveryMs) {
      const seconds = Math.round((now - this.windowStart) / 1000);
      this.log.warn(
        { ...fields, state: 'failing', retries: this.windowCount, periodS: seconds, err: describe(err) },
        `${what} failing: ${this.windowCount.toLocaleString('en-US')} retries in the last ${seconds} s`,
      );
      this.windowStart = now;
      this.windowCount = 0;
    }
  }

  /** A successful attempt; after failures, one line with what they added up to. Cheap when nothing failed. */
  success(fields: Record<string, unknown> = {}): void {
    if (this.failingSince === undefined) return;
    const seconds = Math.round((this.now() - this.failingSince) / 1000);
    this.log.info(
      { ...fields, state: 'recovered', retries: this.total, periodS: seconds },
      `${this.options.what} succeed again after ${this.total.toLocaleString('en-US')} failed attempts over ${seconds} s`,
    );
    this.failingSince = undefined;
    this.total = 0;
    this.windowCount = 0;
  }
}

/** A short, bounded name for what went wrong: "ConnectionError", "ResponseError 503", "Error ECONNRESET". */
export function failureReason(err: unknown): string {
  if (!(err instanceof Error)) return typeof err;
  const e = err as Error & { statusCode?: number; code?: unknown };
  const detail = e.statusCode ?? (typeof e.code === 'string' ? e.code : undefined);
  return detail === undefined ? e.name : `${e.name} ${detail}`;
}

const describe = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message}` : String(err);
