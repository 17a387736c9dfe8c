import { type MonoTypeOperatorFunction, tap } from 'rxjs';
import type { RawRecord } from '../model/message.js';
import type { OffsetTracker } from '../model/offset-tracker.js';

/**
 * Registers every record's offset with the partition's tracker as it enters the
 * graph, before anything can complete it, so that `commitInOrder` knows the
 * exact sequence of offsets (gaps included) it must not commit past.
 *
 * ```
 * records: --a--b--c--|
 * trackIntake
 * output:  --a--b--c--|      (tracker: a, b, c registered, in that order)
 * ```
 */
export function trackIntake<P>(tracker: OffsetTracker<P>): MonoTypeOperatorFunction<RawRecord> {
  return tap((record) => tracker.register(record.offset));
}
