import type { ManualClock } from './manual-clock.js';

export interface SimulatedDestinationOptions {
  /** Requests processed at once (Elasticsearch's write threads). */
  readonly capacity: number;
  /** Requests that may wait for a slot; beyond that, requests are refused at once. */
  readonly queue: number;
  /** Service time of one request (ms). */
  readonly serviceMs: number;
  /** Relative jitter of the service time: ±noise. */
  readonly noise: number;
  /** A refusal's answer time (ms). */
  readonly refuseMs?: number;
  readonly random: () => number;
}

export interface SimulatedAnswer {
  /**
   * True when the destination refused for load. The model answers such a refusal as
   * Elasticsearch does under indexing pressure: HTTP 200 with every item a 429, so only
   * an item-level check sees it.
   */
  readonly itemsRejected: boolean;
}

/**
 * A destination with a capacity, on a manual clock: `capacity` slots, a bounded queue in
 * front of them, and refusals beyond that. Its throughput is capacity / serviceMs no matter
 * how many requests are sent; more in flight than `capacity` only adds queueing latency,
 * more than `capacity + queue` adds refusals.
 */
export class SimulatedDestination {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];
  served = 0;
  refused = 0;
  maxConcurrent = 0;

  constructor(
    private readonly clock: ManualClock,
    private readonly o: SimulatedDestinationOptions,
  ) {}

  handle(): Promise<SimulatedAnswer> {
    return new Promise((resolve) => {
      if (this.busy >= this.o.capacity && this.waiting.length >= this.o.queue) {
        this.refused++;
        this.clock.setTimeout(() => resolve({ itemsRejected: true }), this.o.refuseMs ?? 1);
        return;
      }
      const start = () => {
        this.busy++;
        this.maxConcurrent = Math.max(this.maxConcurrent, this.busy);
        const jitter = 1 + this.o.noise * (2 * this.o.random() - 1);
        this.clock.setTimeout(() => {
          this.busy--;
          this.served++;
          this.waiting.shift()?.();
          resolve({ itemsRejected: false });
        }, this.o.serviceMs * jitter);
      };
      if (this.busy < this.o.capacity) start();
      else this.waiting.push(start);
    });
  }
}
