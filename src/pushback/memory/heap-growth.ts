import { setFlagsFromString } from 'node:v8';

/**
 * Bounds how far V8 lets the old generation grow past what the last major GC left alive
 * before it collects again (HEAP_GROWTH_PERCENT; 0 leaves V8's own choice).
 *
 * Why: with a default heap limit of several GB, V8 lets the old generation reach up to 4×
 * what is alive. A draining worker promotes every record it holds in flight (they outlive
 * two scavenges), so its heap swings by about that factor and its resident memory peaks at
 * several times what it uses. A cap (`--max-old-space-size`) bounds that too, but also
 * shrinks the growth factor to 1.3–2× for every heap below 2 GB: major GCs several times as
 * often, paid in throughput (docs/decisions.md, 11). The growth factor alone is the
 * part that matters, and unlike the cap it can be changed after start: V8 reads it each time
 * a major GC sets the next limit.
 */
export function setHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) {
    throw new RangeError(`heap growth must be a whole number of percent ≥ 0, got ${percent}`);
  }
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
