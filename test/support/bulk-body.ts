/** The lines of a `_bulk` body as the worker sends it (one NDJSON string), parsed: what a fake client reads. */
export function bulkLines(body: string): unknown[] {
  if (typeof body !== 'string')
    throw new Error(`expected a _bulk body as one NDJSON string, got ${typeof body}`);
  if (!body.endsWith('\n')) throw new Error('a _bulk body must end with a newline');
  return body
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
}
