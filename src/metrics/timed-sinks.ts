import { defer, finalize, from, type ObservableInput } from 'rxjs';
import type { CommitSink, DocumentStore, KnownCopies } from '../sinks/ports.js';
import type { StageObserver } from './metric-labels.js';

/**
 * The same sinks, reporting how long each call took (failed ones too): what a record's time in
 * the worker is made of, beside the time it spends waiting between the stages.
 */

const isPromiseLike = <T>(input: ObservableInput<T>): input is PromiseLike<T> =>
  typeof (input as PromiseLike<T>).then === 'function';

/** Times one call: a promise from the call until it settles; an observable while subscribed (it is lazy). */
function timed<T>(observe: (seconds: number) => void, call: () => ObservableInput<T>): ObservableInput<T> {
  const since = (started: number) => () => observe((performance.now() - started) / 1000);
  const started = performance.now();
  const input = call();
  if (isPromiseLike(input)) return Promise.resolve(input).finally(since(started));
  return defer(() => from(input).pipe(finalize(since(performance.now()))));
}

/** Each commit, retries included. */
export function timedCommitSink(sink: CommitSink, observe: (seconds: number) => void): CommitSink {
  return { commit: (offset, records) => timed(observe, () => sink.commit(offset, records)) };
}

/** Each lookup of known copies (`redis-lookup`) and each remembering of owners (`redis-marks`). */
export function timedKnownCopies(known: KnownCopies, observe: StageObserver): KnownCopies {
  return {
    owners: (events) =>
      timed(
        (s) => observe('redis-lookup', s),
        () => known.owners(events),
      ),
    remember: (owners) =>
      timed(
        (s) => observe('redis-marks', s),
        () => known.remember(owners),
      ),
  };
}

/** Each write of a batch: the wait for a request slot, the requests and their retries. */
export function timedDocumentStore(store: DocumentStore, observe: StageObserver): DocumentStore {
  return {
    createEvents: (events, signal) =>
      timed(
        (s) => observe('write-events', s),
        () => store.createEvents(events, signal),
      ),
    mergeProfiles: (updates, signal) =>
      timed(
        (s) => observe('write-profiles', s),
        () => store.mergeProfiles(updates, signal),
      ),
    deleteProfiles: (clientIds, signal) =>
      timed(
        (s) => observe('delete-profiles', s),
        () => store.deleteProfiles(clientIds, signal),
      ),
  };
}
