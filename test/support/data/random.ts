import { Rng } from '../../../src/generator/workload.js';

/** A seeded random() (the generator's mulberry32), so that a failing property test can be replayed. */
export function prng(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}

/** A shuffled copy (Fisher–Yates) driven by `random`. */
export function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
