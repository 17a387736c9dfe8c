/**
 * The events index of an event when EVENTS_INDEX holds a date pattern (contract, "Output:
 * Elasticsearch"): `events-{yyyy.MM.dd}`, `events-{yyyy.MM}`, `events-{yyyy}`, `{yyyy-MM}`,
 * `{yyyy-MM-dd}`, one pattern per name (src/config/config.ts checks the setting). The date
 * is the event's own `ts` in UTC, so every copy of an event lands in the same index.
 */

const PATTERN = /\{(yyyy|yyyy\.MM|yyyy\.MM\.dd|yyyy-MM|yyyy-MM-dd)\}/;
/** A time with no zone designator: Elasticsearch reads it as UTC, Date.parse as local time. */
const NO_ZONE = /T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The index for an event created at `ts` (ISO 8601). Throws a RangeError for a ts that is not a date. */
export function eventsIndexFor(pattern: string, ts: string): string {
  const m = PATTERN.exec(pattern);
  if (m === null) return pattern;
  const ms = Date.parse(NO_ZONE.test(ts) ? `${ts}Z` : ts);
  if (Number.isNaN(ms)) throw new RangeError(`ts ${JSON.stringify(ts)} is not an ISO 8601 date`);
  const d = new Date(ms);
  const yyyy = pad(d.getUTCFullYear(), 4);
  const MM = pad(d.getUTCMonth() + 1);
  const dd = pad(d.getUTCDate());
  const date = m[1]!.replace('yyyy', yyyy).replace('MM', MM).replace('dd', dd);
  return pattern.slice(0, m.index) + date + pattern.slice(m.index + m[0].length);
}

/** The wildcard that covers every index of the pattern (for an index template or a search). */
export function eventsIndexWildcard(pattern: string): string {
  return pattern.replace(PATTERN, '*');
}

/** True for the names the pattern produces (and only those, unlike the wildcard). */
export function isEventsIndexOf(pattern: string, index: string): boolean {
  const m = PATTERN.exec(pattern);
  if (m === null) return index === pattern;
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const date = literal(m[1]!).replace('yyyy', '\\d{4}').replace('MM', '\\d{2}').replace('dd', '\\d{2}');
  const re = new RegExp(
    `^${literal(pattern.slice(0, m.index))}${date}${literal(pattern.slice(m.index + m[0].length))}$`,
  );
  return re.test(index);
}

/** Whether EVENTS_INDEX holds a date pattern (then every event's index comes from its `ts`). */
export function isDatePattern(pattern: string): boolean {
  return PATTERN.test(pattern);
}
