// Preloaded into a benchmark worker (node --import) when $BENCH_ALLOC_FILE is set: V8's
// sampling heap profiler, counting the objects that minor and major GCs collected as well,
// so the profile is what the worker allocated (its GC work), not only what it still holds.
// The profile so far is written every 2 s (the last write wins: the worker may be killed).
// Observation only, but not free: the bench reports rates from other drains.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const file = process.env.BENCH_ALLOC_FILE;
if (file) {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 32 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  setInterval(() => {
    session.post('HeapProfiler.getSamplingProfile', (err, result) => {
      if (!err) writeFileSync(file, JSON.stringify(result.profile));
    });
  }, 2000).unref();
}
