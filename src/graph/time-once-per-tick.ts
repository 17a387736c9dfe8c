import type { SchedulerLike } from 'rxjs';

/**
 * `scheduler` with its clock read once per turn of the event loop: every value of one
 * synchronous run (a kafkajs batch pushed record by record) sees the same `now()`, and the
 * next turn reads the clock again. The windowed dedup and the per-client idle bookkeeping
 * ask the time for every record; reading it once per batch instead saves two clock reads
 * per record. Their windows are seconds long, so a batch taking the instant it
 * started is no change to what they decide. Scheduling is `scheduler`'s own.
 */
export function timeOncePerTick(scheduler: SchedulerLike): SchedulerLike {
  let now: number | undefined;
  const forget = () => {
    now = undefined;
  };
  return {
    now: () => {
      if (now === undefined) {
        now = scheduler.now();
        queueMicrotask(forget);
      }
      return now;
    },
    schedule: scheduler.schedule.bind(scheduler),
  };
}
