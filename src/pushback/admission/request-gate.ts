import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import type { AdaptiveConcurrencyLimiter } from './adaptive-concurrency.js';
import { BreakerDisposedError, type CircuitBreaker } from './circuit-breaker.js';
import type { CallGate, CallPass, RequestGate, RequestOutcome, RequestPass } from './gates.js';

/**
 * The RequestGate of one destination: a concurrency permit first, then the breaker's
 * admission. In that order so that time spent waiting for a permit never counts toward the
 * breaker's slow-call limit, and the RTT handed to the limiter is measured from the
 * breaker's admission (the request going out), not from the permit: waiting out an open
 * breaker is not latency.
 */
export class AdmissionGate implements RequestGate {
  private readonly clock: Pick<Clock, 'now'>;

  constructor(
    private readonly limiter: AdaptiveConcurrencyLimiter,
    private readonly breaker: CircuitBreaker,
    clock: Pick<Clock, 'now'> = systemClock,
  ) {
    this.clock = clock;
  }

  async acquire(signal?: AbortSignal): Promise<RequestPass> {
    const permit = await this.limiter.acquire(signal);
    let ticket: Awaited<ReturnType<CircuitBreaker['admit']>>;
    try {
      ticket = await this.breaker.admit(signal);
    } catch (err) {
      permit.cancel();
      throw err;
    }
    const sentAt = this.clock.now();
    let released = false;
    return {
      release: ({ result, timesWrites = true }: RequestOutcome) => {
        if (released) return;
        released = true;
        // Only the writes' round trips feed the limit's moving mean: reads answer in a
        // fraction of a bulk's time, and mixed in they hide a cluster whose writes slowed down.
        const rttMs = timesWrites ? this.clock.now() - sentAt : Number.NaN;
        switch (result) {
          case 'ok':
            ticket.success();
            permit.release({ rttMs, backpressure: false });
            break;
          case 'pushback':
            ticket.success();
            permit.release({ rttMs, backpressure: true });
            break;
          case 'failed':
            ticket.failure();
            permit.release({ rttMs, backpressure: true });
            break;
          case 'unsent':
            ticket.cancel();
            permit.cancel();
            break;
        }
      },
    };
  }
}

/**
 * The CallGate of an optional server (Redis): the breaker's admission, without waiting and
 * without a concurrency limit (a call that is not let through takes its fallback at once).
 * A disposed breaker (the worker stopping) lets nothing through.
 */
export class BreakerCallGate implements CallGate {
  constructor(private readonly breaker: CircuitBreaker) {}

  tryPass(): CallPass | undefined {
    let ticket: ReturnType<CircuitBreaker['tryAdmit']>;
    try {
      ticket = this.breaker.tryAdmit();
    } catch (err) {
      if (err instanceof BreakerDisposedError) return undefined;
      throw err;
    }
    if (ticket === undefined) return undefined;
    const t = ticket;
    return { release: (result) => (result === 'ok' ? t.success() : t.failure()) };
  }
}
