import { performance } from 'node:perf_hooks';
import { Counter, type Registry } from 'prom-client';

/**
 * `rxingest_nodejs_eventloop_busy_seconds_total`: how long the main thread has been busy since
 * the process started (Node's event-loop utilisation, `active` time), counted when scraped.
 *
 * Why: the worker does its per-record work on one thread. Its rate over a minute is that
 * thread's utilisation; near 1 the worker is CPU-bound however idle the machine's other cores
 * are, and only less CPU per record (or another worker) makes it faster. Lag says the loop
 * was held once; this says how much of the time it was.
 */
export function eventLoopBusyCounter(registry: Registry): Counter {
  let counted = 0;
  return new Counter({
    name: 'rxingest_nodejs_eventloop_busy_seconds_total',
    help: 'Time the main thread has been busy (not waiting for I/O or timers) since start; its rate is the event-loop utilisation, 1 = the worker thread is saturated',
    registers: [registry],
    collect() {
      const active = performance.eventLoopUtilization().active;
      if (active > counted) this.inc((active - counted) / 1000);
      counted = active;
    },
  });
}
