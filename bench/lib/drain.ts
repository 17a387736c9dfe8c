import type { BenchWorker } from './worker.js';

/**
 * Drain rate from the samples: from the first sample that shows the worker at work (records in
 * its graphs or done), less half a sampling interval, to the moment the last record was done.
 */
export function drainRate(w: BenchWorker, upTo: number): { rate: number; ms: number } {
  const i = w.samples.findIndex((s) => s.inFlight > 0 || s.done > 0);
  const first = w.samples[i];
  const before = w.samples[i - 1];
  const start = first ? (before ? (before.t + first.t) / 2 : first.t) : undefined;
  const lastT = w.timeOfDone(upTo) ?? w.last?.t;
  if (start === undefined || lastT === undefined || lastT <= start)
    return { rate: Number.NaN, ms: Number.NaN };
  const doneAtEnd = Math.min(upTo, w.last?.done ?? 0);
  return { rate: (doneAtEnd * 1000) / (lastT - start), ms: lastT - start };
}
