/** JSON values as the generator builds them. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A null-prototype object, so `__proto__` and friends are plain own keys (for building hostile JSON). */
export const bare = (entries: [string, Json][]): { [k: string]: Json } => {
  const o: { [k: string]: Json } = Object.create(null);
  for (const [k, v] of entries) o[k] = v;
  return o;
};

export const encode = (o: Json): Buffer => Buffer.from(JSON.stringify(o), 'utf8');
