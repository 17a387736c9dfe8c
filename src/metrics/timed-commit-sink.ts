import type { CommitSink } from '../sinks/ports.js';

/** The same sink, reporting how long each commit took (retries included), failed ones too. */
export function timedCommitSink(sink: CommitSink, observe: (seconds: number) => void): CommitSink {
  return {
    async commit(offset, records) {
      const started = performance.now();
      try {
        return await sink.commit(offset, records);
      } finally {
        observe((performance.now() - started) / 1000);
      }
    },
  };
}
