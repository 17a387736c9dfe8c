/**
 * Where a worker's heap goes, from a V8 heap snapshot (`--heapsnapshot-signal`): self size and
 * count per constructor (objects), per kind for the rest (strings, code, arrays, system). Self
 * sizes add up to the heap in use; buffers' contents live outside the heap and show as
 * `external`/`arrayBuffers` in process.memoryUsage(), so the ArrayBuffer rows here are only their
 * small on-heap handles, and the snapshot's own `native` sizes stand for those contents.
 */
import { readFile } from 'node:fs/promises';

interface HeapSnapshot {
  readonly snapshot: {
    readonly meta: { readonly node_fields: readonly string[]; readonly node_types: readonly unknown[] };
  };
  readonly nodes: readonly number[];
  readonly strings: readonly string[];
}

export interface HeapRow {
  readonly what: string;
  readonly count: number;
  readonly bytes: number;
}

export function summarizeHeap(h: HeapSnapshot, top = 15): { totalBytes: number; rows: HeapRow[] } {
  const fields = h.snapshot.meta.node_fields;
  const types = h.snapshot.meta.node_types[0] as readonly string[];
  const width = fields.length;
  const iType = fields.indexOf('type');
  const iName = fields.indexOf('name');
  const iSize = fields.indexOf('self_size');
  const by = new Map<string, { count: number; bytes: number }>();
  let total = 0;
  for (let i = 0; i < h.nodes.length; i += width) {
    const type = types[h.nodes[i + iType]!] ?? '?';
    const size = h.nodes[i + iSize]!;
    total += size;
    // Objects by constructor; strings, arrays, code and the rest by kind (their names are contents).
    const what =
      type === 'object' || type === 'native' ? `${h.strings[h.nodes[i + iName]!]} (${type})` : `(${type})`;
    const row = by.get(what) ?? { count: 0, bytes: 0 };
    row.count++;
    row.bytes += size;
    by.set(what, row);
  }
  const rows = [...by.entries()]
    .map(([what, r]) => ({ what, ...r }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, top);
  return { totalBytes: total, rows };
}

export async function summarizeHeapFile(file: string, top?: number) {
  return summarizeHeap(JSON.parse(await readFile(file, 'utf8')) as HeapSnapshot, top);
}
