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

/**
 * A drain's window, from the first sample that shows the worker at work to the first at or
 * after its last record was done: CPU seconds of a process over it, and per document.
 */
export function drainWindow(w: BenchWorker, upTo: number) {
  const first = w.samples.find((s) => s.inFlight > 0 || s.done > 0);
  const endT = w.timeOfDone(upTo) ?? w.last?.t ?? 0;
  const last = w.samples.find((s) => s.t >= endT) ?? w.last;
  const used = (process: string) => (last?.cpu[process] ?? Number.NaN) - (first?.cpu[process] ?? Number.NaN);
  const done = (last?.done ?? 0) - (first?.done ?? 0);
  const seconds = ((last?.t ?? 0) - (first?.t ?? 0)) / 1000;
  return {
    first,
    last,
    endT,
    used,
    /** CPU µs per document of a process (`worker`, `kafka`, `elasticsearch`, …). */
    perDoc: (process: string) => (used(process) * 1e6) / Math.max(1, done),
    /** Share of the window the worker's main thread was busy (event-loop utilisation). */
    threadBusy: ((last?.loopBusySeconds ?? Number.NaN) - (first?.loopBusySeconds ?? Number.NaN)) / seconds,
  };
}
