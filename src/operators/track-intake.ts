import { map, type OperatorFunction } from 'rxjs';
import type { RawRecord } from '../model/message.js';
import type { OffsetTracker } from '../model/offset-tracker.js';
import { type Entry, entryOf } from '../model/outcome.js';

/**
 * Registers every record's offset with the partition's tracker as it enters the graph,
 * before anything can complete it, so that `commitInOrder` knows the exact sequence of
 * offsets (gaps included) it must not commit past. Each record becomes an open entry
 * carrying its sequence number in the tracker.
 *
 * ```
 * records: --a--b--c--|
 * trackIntake
 * output:  --A--B--C--|      A = { record: a, seq: 0 }, B = { record: b, seq: 1 }, …
 * ```
 */
export function trackIntake<P>(tracker: OffsetTracker<P>): OperatorFunction<RawRecord, Entry> {
  return map((record) => entryOf(record, tracker.register(record.offset)));
}
