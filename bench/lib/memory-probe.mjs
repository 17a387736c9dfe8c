// Preloaded into benchmark worker processes (node --import): every 250 ms, appends
// process.memoryUsage() as one JSON line to $BENCH_MEMORY_FILE. Observation only: it reads
// counters and touches nothing of the worker.
import { appendFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

const file = process.env.BENCH_MEMORY_FILE;
if (file) {
  const t0 = performance.now();
  setInterval(() => {
    const m = process.memoryUsage();
    const line = {
      t: Math.round(performance.now() - t0),
      rss: m.rss,
      heapTotal: m.heapTotal,
      heapUsed: m.heapUsed,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      newSpace: getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0,
    };
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  }, 250).unref();
}
