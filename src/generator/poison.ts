import { encode, type Json } from './json-values.js';
import type { Rng } from './rng.js';
import type { PoisonKind } from './workload-options.js';

export interface PoisonContext {
  readonly rng: Rng;
  /** Poison built from a profile update (else an event). */
  readonly asProfile: boolean;
  readonly maxMessageBytes: number;
  /** A fresh valid message to break. */
  readonly template: () => { [k: string]: Json };
  /** A fresh valid purchase event (the oversize poison grows its data). */
  readonly purchase: () => { [k: string]: Json };
}

/**
 * The bytes of one poison record of `kind`, and what is wrong with them. Each kind is
 * poison by the contract: invalid JSON (truncated, binary, empty, …), a missing required
 * field, a field of the wrong type, a value over MAX_MESSAGE_BYTES, a tombstone.
 */
export function poisonValue(
  kind: PoisonKind,
  { rng, asProfile, maxMessageBytes, template, purchase }: PoisonContext,
): { value: Buffer | null; detail: string; keyless?: boolean } {
  switch (kind) {
    case 'invalid-json': {
      const text = JSON.stringify(template());
      const keyless = rng.chance(0.2);
      switch (rng.int(6)) {
        case 0:
          return {
            value: Buffer.from(text.slice(0, rng.between(1, text.length - 1))),
            detail: 'truncated',
            keyless,
          };
        case 1:
          return { value: Buffer.from('this is not json'), detail: 'not-json', keyless };
        case 2: {
          const bytes = [0xff, 0xfe];
          for (let n = rng.between(8, 32); n > 0; n--) bytes.push(rng.int(256));
          return { value: Buffer.from(bytes), detail: 'binary', keyless };
        }
        case 3:
          return { value: Buffer.alloc(0), detail: 'empty', keyless };
        case 4:
          return { value: Buffer.from(`${text.slice(0, -1)},}`), detail: 'trailing-comma', keyless };
        default:
          return { value: Buffer.from(text.replaceAll('"', "'")), detail: 'single-quotes', keyless };
      }
    }
    case 'missing-field': {
      const m = template();
      const required = asProfile
        ? ['id', 'clientId', 'type', 'ts', 'version', 'data']
        : ['id', 'clientId', 'type', 'ts', 'name'];
      const field = rng.pick(required);
      delete m[field];
      return { value: encode(m), detail: `missing:${field}` };
    }
    case 'wrong-type': {
      const m = template();
      const variants: [string, Json][] = [
        ['id', 12345],
        ['id', ''],
        ['clientId', 42],
        ['clientId', ''],
        ['type', 'signal'],
        ['type', 7],
        ['ts', 'not-a-date'],
        ['ts', 1767225600000],
        ['data', [1, 2, 3]],
        ['data', 'plan=pro'],
        ['$', null],
      ];
      if (asProfile) variants.push(['version', '3'], ['version', -1], ['version', 1.5], ['version', null]);
      else variants.push(['name', 7], ['name', '']);
      const [field, value] = rng.pick(variants);
      if (field === '$') {
        // Valid JSON, but not an object.
        const top: Json = rng.pick<Json>([[m], JSON.stringify(m), null, 42]);
        return {
          value: encode(top),
          detail: `not-an-object:${top === null ? 'null' : Array.isArray(top) ? 'array' : typeof top}`,
        };
      }
      m[field] = value;
      return { value: encode(m), detail: `${field}:${JSON.stringify(value)}` };
    }
    case 'oversize': {
      const m = purchase();
      const data = (m.data ?? {}) as { [k: string]: Json };
      data.blob = '';
      m.data = data;
      const target = maxMessageBytes + rng.between(1, 1024);
      data.blob = 'x'.repeat(target - encode(m).length);
      return { value: encode(m), detail: `bytes:${target}` };
    }
    case 'null-value':
      return { value: null, detail: 'tombstone' };
  }
}
