/**
 * The raw `_bulk` loader: the documents encoded into NDJSON request bodies before the clock
 * starts, then sent with `concurrency` requests in flight. What Elasticsearch can write when
 * nothing stands before it: the ceiling the worker is measured against.
 */
import type { Client } from '@elastic/elasticsearch';

export interface RawDoc {
  readonly index: 'events' | 'profiles';
  readonly op: 'create' | 'index';
  readonly id: string;
  readonly source: object;
}

export interface RawLoadResult {
  readonly ms: number;
  readonly docs: number;
  readonly rate: number;
  /** Items refused with anything but 409 (a create of an id that exists: a re-sent copy). */
  readonly errors: number;
}

/** One NDJSON body per `batch` documents (action line + source per document). */
export function encodeBodies(
  docs: readonly RawDoc[],
  indices: { readonly events: string; readonly profiles: string },
  batch: number,
): string[] {
  const bodies: string[] = [];
  for (let i = 0; i < docs.length; i += batch) {
    let body = '';
    for (const d of docs.slice(i, i + batch)) {
      body += `${JSON.stringify({ [d.op]: { _index: indices[d.index], _id: d.id } })}\n${JSON.stringify(d.source)}\n`;
    }
    bodies.push(body);
  }
  return bodies;
}

interface BulkAnswer {
  readonly items: Record<string, { status: number }>[];
}

export async function loadRaw(
  es: Client,
  bodies: readonly string[],
  docs: number,
  concurrency: number,
): Promise<RawLoadResult> {
  let next = 0;
  let errors = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const res = (await es.transport.request(
        { method: 'POST', path: '/_bulk', bulkBody: body },
        { requestTimeout: 120_000 },
      )) as BulkAnswer;
      for (const item of res.items) {
        const r = Object.values(item)[0];
        if (r && r.status >= 300 && r.status !== 409) errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const ms = performance.now() - t0;
  return { ms, docs, rate: (docs * 1000) / ms, errors };
}
