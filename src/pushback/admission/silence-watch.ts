import type { Clock, TimerHandle } from '../clock.js';

/**
 * Asks the destination the cheapest question it can answer, with a timeout: true when it
 * answered anything at all (even an error status below 500), false on silence, a refused
 * connection or a 5xx.
 */
export type AnswersAtAll = (timeoutMs: number) => Promise<boolean>;

export interface SilenceWatchSettings {
  /** Requests waiting and no answer for this long start a liveness check (0: off). */
  readonly silenceMs: number;
  /** The liveness check's timeout. */
  readonly livenessTimeoutMs: number;
}

export interface SilenceWatchHooks {
  readonly clock: Clock;
  readonly answersAtAll: AnswersAtAll;
  /** Requests have waited `silentForMs` with no answer and the liveness check got none either. */
  readonly onSilent: (silentForMs: number) => void;
}

/**
 * Tells a destination that has stopped answering (a frozen process, a partitioned network)
 * from one that is merely slow. Request durations alone cannot: a frozen server holds every
 * request until its timeout, and a slow one holds them nearly as long. So when requests
 * are waiting and nothing has answered for `silenceMs`, the watch asks the destination
 * something cheap; a slow server answers that at once, a frozen one does not.
 *
 * While requests flow this costs nothing but a timer. A slow destination costs one cheap
 * request per quiet spell; a frozen one is found within `silenceMs + livenessTimeoutMs`.
 */
export class SilenceWatch {
  private readonly waiting = new Map<number, number>();
  private seq = 0;
  private lastAnswerAt: number;
  private answers = 0;
  private timer: TimerHandle | undefined;
  private checking = false;
  private recovering: TimerHandle | undefined;
  private epoch = 0;
  private stopped = false;

  constructor(
    private readonly settings: SilenceWatchSettings,
    private readonly hooks: SilenceWatchHooks,
  ) {
    this.lastAnswerAt = hooks.clock.now();
  }

  get enabled(): boolean {
    return this.settings.silenceMs > 0;
  }

  /**
   * A request went out; call the returned function once when it ends: `answered` false when
   * it was never sent after all.
   */
  sent(): (answered: boolean) => void {
    if (!this.enabled || this.stopped) return () => undefined;
    const id = this.seq++;
    const epoch = this.epoch;
    this.waiting.set(id, this.hooks.clock.now());
    this.arm();
    return (answered) => {
      if (epoch !== this.epoch || !this.waiting.delete(id) || !answered) return;
      this.lastAnswerAt = this.hooks.clock.now();
      this.answers++;
    };
  }

  /**
   * Forgets the requests waiting now (their outcome no longer matters to the caller) and
   * stops watching until the next request goes out.
   */
  forget(): void {
    this.epoch++;
    this.waiting.clear();
    this.disarm();
  }

  /**
   * Checks liveness again and again (one check at a time, `silenceMs` apart when checks fail
   * fast) until the destination answers, then calls `onAnswer` once. `forget()` or `stop()`
   * ends it.
   */
  untilAnswering(onAnswer: () => void): void {
    const epoch = ++this.epoch;
    this.waiting.clear();
    this.disarm();
    const attempt = () => {
      this.recovering = undefined;
      const started = this.hooks.clock.now();
      void this.ask().then((alive) => {
        if (this.stopped || epoch !== this.epoch) return;
        if (alive) {
          this.lastAnswerAt = this.hooks.clock.now();
          onAnswer();
          return;
        }
        const elapsed = this.hooks.clock.now() - started;
        this.recovering = this.hooks.clock.setTimeout(
          attempt,
          Math.max(0, this.settings.silenceMs - elapsed),
        );
      });
    };
    attempt();
  }

  stop(): void {
    this.stopped = true;
    this.forget();
  }

  private quietSince(): number | undefined {
    let oldest: number | undefined;
    for (const at of this.waiting.values()) if (oldest === undefined || at < oldest) oldest = at;
    return oldest === undefined ? undefined : Math.max(oldest, this.lastAnswerAt);
  }

  private arm(): void {
    if (this.timer !== undefined || this.checking || this.stopped) return;
    const since = this.quietSince();
    if (since === undefined) return;
    const due = since + this.settings.silenceMs - this.hooks.clock.now();
    this.timer = this.hooks.clock.setTimeout(() => {
      this.timer = undefined;
      this.onDue();
    }, due);
  }

  private disarm(): void {
    if (this.timer !== undefined) this.hooks.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.recovering !== undefined) this.hooks.clock.clearTimeout(this.recovering);
    this.recovering = undefined;
  }

  private onDue(): void {
    const since = this.quietSince();
    if (since === undefined) return;
    if (this.hooks.clock.now() - since < this.settings.silenceMs) {
      this.arm();
      return;
    }
    const epoch = this.epoch;
    const answersBefore = this.answers;
    this.checking = true;
    void this.ask().then((alive) => {
      this.checking = false;
      if (this.stopped || epoch !== this.epoch) return;
      if (alive) this.lastAnswerAt = Math.max(this.lastAnswerAt, this.hooks.clock.now());
      const quiet = this.quietSince();
      // A request answered while the check was out: the destination is not silent.
      if (!alive && quiet !== undefined && this.answers === answersBefore)
        this.hooks.onSilent(this.hooks.clock.now() - quiet);
      else this.arm();
    });
  }

  private ask(): Promise<boolean> {
    return this.hooks.answersAtAll(this.settings.livenessTimeoutMs).catch(() => false);
  }
}
