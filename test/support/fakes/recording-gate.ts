import type { RequestGate, RequestOutcome, RequestPass } from '../../../src/pushback/admission/gates.js';

/**
 * A RequestGate for unit tests: counts passes, records each request's outcome, and can be
 * shut (acquire waits, as behind an open breaker) and opened again. Abortable like the real one.
 */
export class RecordingGate implements RequestGate {
  acquired = 0;
  readonly outcomes: RequestOutcome['result'][] = [];
  /** Passes handed out and not yet released. */
  inFlight = 0;
  private shut = false;
  private readonly waiting: (() => void)[] = [];

  close(): void {
    this.shut = true;
  }

  open(): void {
    this.shut = false;
    for (const w of this.waiting.splice(0)) w();
  }

  get waiters(): number {
    return this.waiting.length;
  }

  async acquire(signal?: AbortSignal): Promise<RequestPass> {
    signal?.throwIfAborted();
    if (this.shut) {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          this.waiting.splice(this.waiting.indexOf(go), 1);
          reject(signal!.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(go);
      });
    }
    this.acquired++;
    this.inFlight++;
    let released = false;
    return {
      release: ({ result }) => {
        if (released) return;
        released = true;
        this.inFlight--;
        this.outcomes.push(result);
      },
    };
  }
}
