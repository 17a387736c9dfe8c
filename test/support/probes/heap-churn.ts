/**
 * A child process for the heap-growth test: sets HEAP_GROWTH_PERCENT the way the worker does
 * (after start), then keeps a working set of about 40 MB alive while replacing it, so that
 * objects are promoted and die in the old generation, as a draining worker's records do.
 * Run it with `node --trace-gc`: the test reads the major GCs from its output.
 */
import { setHeapGrowth } from '../../../src/pushback/memory/heap-growth.js';

const percent = Number(process.env.HEAP_GROWTH_PERCENT ?? '0');
setHeapGrowth(percent);

const SLOTS = 200_000;
const live: unknown[] = new Array(SLOTS);
let x = 0;
const until = Date.now() + Number(process.env.CHURN_MS ?? '3000');
while (Date.now() < until) {
  for (let i = 0; i < 10_000; i++) {
    x = (x + 7919) % SLOTS;
    live[x] = { id: `id-${x}-${i}`, data: { a: i, b: [i, x] } };
  }
}
process.stdout.write(`churned ${live.length}\n`);
