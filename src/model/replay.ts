/**
 * Headers of a dead letter's replay (`rxingest dlq replay`), shared by the tool that writes
 * them and the worker that carries them forward when a replayed record is dead-lettered again.
 *
 * On a replayed record (written back to its source topic):
 * - `x-replay-of`: `<dlqTopic>/<partition>/<offset>` of the dead letter it replays;
 * - `x-replay-root`: the same for the lineage's first dead letter (the original failure);
 * - `x-replay-count`: how many times that lineage has been replayed, this replay included.
 * On the dead letter of a replayed record: `x-dead-letter-count`, the attempts made with the
 * record (the first, plus one per replay: x-replay-count + 1; a first dead letter has none),
 * and the replayed record's replay headers.
 */
export const REPLAY_OF = 'x-replay-of';
export const REPLAY_ROOT = 'x-replay-root';
export const REPLAY_COUNT = 'x-replay-count';
export const DEAD_LETTER_COUNT = 'x-dead-letter-count';

/** Kafka headers as kafkajs hands them over (a repeated header is an array: the last one counts). */
type Headers = Readonly<Record<string, unknown>> | undefined;

const text = (v: unknown): string | undefined => {
  const last = Array.isArray(v) ? v[v.length - 1] : v;
  if (typeof last === 'string') return last;
  return Buffer.isBuffer(last) ? last.toString('utf8') : undefined;
};

/** A whole number ≥ 0 from a header, or 0 when it is absent or not one. */
export function countHeader(headers: Headers, name: string): number {
  const v = headers !== undefined && Object.hasOwn(headers, name) ? text(headers[name]) : undefined;
  return v !== undefined && /^\d{1,9}$/.test(v) ? Number(v) : 0;
}

/**
 * The headers a dead letter adds for a replayed record: the dead-letter count (one more than
 * the replays it has been through) and its replay lineage. Nothing for a record never replayed.
 */
export function deadLetterLineage(headers: Headers): Record<string, string> {
  const replays = countHeader(headers, REPLAY_COUNT);
  if (replays === 0) return {};
  const out: Record<string, string> = { [DEAD_LETTER_COUNT]: String(replays + 1) };
  for (const name of [REPLAY_OF, REPLAY_ROOT, REPLAY_COUNT]) {
    const v = Object.hasOwn(headers!, name) ? text(headers![name]) : undefined;
    if (v !== undefined) out[name] = v;
  }
  return out;
}
