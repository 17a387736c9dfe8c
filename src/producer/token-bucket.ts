/**
 * A token bucket: `ratePerSec` tokens a second, at most `burst` saved up. Unlimited when
 * the rate is undefined. Pure arithmetic on a clock reading; the caller sleeps.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private rate: number | undefined;
  private burst: number;

  constructor(
    private readonly now: () => number,
    ratePerSec: number | undefined,
    private readonly burstSeconds = 0.1,
  ) {
    this.rate = ratePerSec;
    this.burst = this.burstFor(ratePerSec);
    this.tokens = this.burst;
    this.last = now();
  }

  get ratePerSec(): number | undefined {
    return this.rate;
  }

  /** Changes the rate; the tokens saved so far are kept, within the new burst. */
  setRate(ratePerSec: number | undefined): void {
    if (ratePerSec === this.rate) return;
    this.refill();
    this.rate = ratePerSec;
    this.burst = this.burstFor(ratePerSec);
    this.tokens = Math.min(this.tokens, this.burst);
  }

  /** Takes up to `n` tokens now; returns how many it took. */
  take(n: number): number {
    if (this.rate === undefined) return n;
    this.refill();
    const taken = Math.min(n, Math.floor(this.tokens));
    this.tokens -= taken;
    return taken;
  }

  /** Milliseconds until `n` tokens (at most a burst's worth) are there. */
  waitMs(n: number): number {
    if (this.rate === undefined) return 0;
    this.refill();
    const want = Math.min(n, this.burst);
    return want <= this.tokens ? 0 : ((want - this.tokens) * 1000) / this.rate;
  }

  private burstFor(rate: number | undefined): number {
    return rate === undefined ? Number.POSITIVE_INFINITY : Math.max(1, rate * this.burstSeconds);
  }

  private refill(): void {
    const now = this.now();
    if (this.rate !== undefined)
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.rate) / 1000);
    this.last = now;
  }
}
