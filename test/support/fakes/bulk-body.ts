/** The lines of a `_bulk` body as the worker sends it (NDJSON bytes), parsed: what a fake client reads. */
export function bulkLines(bytes: Buffer): unknown[] {
  if (!Buffer.isBuffer(bytes))
    throw new Error(`expected a _bulk body as the NDJSON bytes it sends, got ${typeof bytes}`);
  const body = bytes.toString('utf8');
  if (!body.endsWith('\n')) throw new Error('a _bulk body must end with a newline');
  return body
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
}
