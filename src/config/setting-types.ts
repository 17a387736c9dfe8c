import { z } from 'zod';

/**
 * The value types settings share, each with the words a refusal shows: a variable read as a
 * whole number, a topic name or a flag is checked the same way wherever it is declared.
 */

const range = (min: number, max: number) => `a whole number from ${min} to ${max}`;

/** A whole number in `[min, max]`, given as digits. */
export const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, range(min, max))
    .transform(Number)
    .pipe(z.number().int(range(min, max)).min(min, range(min, max)).max(max, range(min, max)));

export const topicName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9._-]{1,249}$/, 'a Kafka topic name (letters, digits, ".", "_", "-")');

/** `true`/`1` or `false`/`0`. */
export const bool = z
  .enum(['true', 'false', '1', '0'], 'true or false')
  .transform((s) => s === 'true' || s === '1');
