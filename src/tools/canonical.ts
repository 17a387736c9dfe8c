import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth: two values that are equal as JSON give the
 * same text, whatever the key order they arrived in. Keys are read with Object.keys, so a
 * `__proto__` key (an own property after JSON.parse) is just a key; nothing is assigned.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * A 52-bit digest of a text, as a number (no allocation per entry beyond a heap number):
 * what reconcile keeps per event instead of its body. A different body matches by chance
 * with probability 2^-52.
 */
export function digest(text: string): number {
  const h = createHash('sha1').update(text).digest();
  return h.readUIntBE(0, 6) * 16 + (h[6]! >> 4);
}

/** JSON equality of two values (key order ignored). */
export const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
