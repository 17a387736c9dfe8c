/** What the reconcile checks share: examples, read bounds, and reading untrusted documents. */

export const MAX_EXAMPLES = 10;

/** Up to MAX_EXAMPLES examples of one kind of difference, and how many there were. */
export class Examples<T> {
  readonly items: T[] = [];
  count = 0;
  add(example: () => T): void {
    this.count++;
    if (this.items.length < MAX_EXAMPLES) this.items.push(example());
  }
}

/** Where the read stopped and started, per "topic/partition": what is outside it is not judged. */
export interface ReadBounds {
  readonly committed: ReadonlyMap<string, bigint>;
  /** `--since`: the first offset read per partition. */
  readonly sinceStart?: ReadonlyMap<string, bigint>;
}

export const isNonNegativeInt = (v: unknown) =>
  (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^\d+$/.test(v));

export type Origin = { topic: string; partition: number; offset: number | string };
export const originOf = (v: unknown): Origin | undefined => {
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  return typeof o.topic === 'string' && isNonNegativeInt(o.partition) && isNonNegativeInt(o.offset)
    ? (o as unknown as Origin)
    : undefined;
};

/** Is this position outside what was judged: not committed yet, or before `--since`? */
export function outside(
  bounds: ReadBounds,
  topic: string,
  partition: number | string,
  offset: number | string | bigint,
) {
  const tp = `${topic}/${partition}`;
  const committed = bounds.committed.get(tp);
  if (committed === undefined) return undefined; // not an input partition
  const o = BigInt(offset);
  if (o >= committed) return 'ahead' as const;
  const since = bounds.sinceStart?.get(tp);
  if (since !== undefined && o < since) return 'before-since' as const;
  return 'inside' as const;
}

export const own = (o: unknown, k: string): unknown =>
  o !== null && typeof o === 'object' && Object.hasOwn(o, k) ? (o as Record<string, unknown>)[k] : undefined;

/** "topic/partition/offset" split in three. */
export function splitPosition(p: string): [string, string, string] {
  const o = p.lastIndexOf('/');
  const q = p.lastIndexOf('/', o - 1);
  return [p.slice(0, q), p.slice(q + 1, o), p.slice(o + 1)];
}
