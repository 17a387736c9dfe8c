/**
 * EVENTS_INDEX may hold one date pattern, e.g. `events-{yyyy.MM.dd}`: the index of an event
 * is chosen by its own `ts` in UTC, so a re-sent copy always lands in the same index and
 * `create` + 409 stays an exact dedup across days (contract, "Output: Elasticsearch").
 */
const PATTERN = /\{(yyyy(?:[.-]MM(?:[.-]dd)?)?)\}/;

export function isDatePattern(eventsIndex: string): boolean {
  return PATTERN.test(eventsIndex);
}

/** The index for an event with this `ts` (ISO 8601, already validated). */
export function eventsIndexFor(eventsIndex: string, ts: string): string {
  const m = PATTERN.exec(eventsIndex);
  if (m === null) return eventsIndex;
  const d = new Date(ts);
  if (Number.isNaN(d.getTime()))
    throw new RangeError(`eventsIndexFor: ts ${JSON.stringify(ts)} is not a date`);
  const yyyy = String(d.getUTCFullYear()).padStart(4, '0');
  const MM = String(d.getUTCMonth() + 1).padStart(2, '0');
  const dd = String(d.getUTCDate()).padStart(2, '0');
  const date = m[1]!.replace('yyyy', yyyy).replace('MM', MM).replace('dd', dd);
  return eventsIndex.replace(m[0], date);
}

/** The wildcard that covers every index of the pattern (index templates, searches). */
export function eventsIndexWildcard(eventsIndex: string): string {
  return eventsIndex.replace(PATTERN, '*');
}
