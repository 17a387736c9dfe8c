import { describe, expect, it } from 'vitest';
import type { RawRecord } from '../../../src/model/message.js';
import { MAX_NESTING_DEPTH, nestingDepth, type Parsed, parseRecord } from '../../../src/model/parse.js';

const MAX = 1024 * 1024;
const TS = '2026-11-30T12:00:00.000Z';

const record = (value: Buffer | string | null, offset = '7'): RawRecord => ({
  topic: 'ingest.events',
  partition: 3,
  offset,
  key: Buffer.from('c-42'),
  value: typeof value === 'string' ? Buffer.from(value) : value,
});

const profile = { id: 'p-1', clientId: 'c-42', type: 'profile', version: 17, ts: TS, data: { plan: 'pro' } };
const event = { id: 'e-1', clientId: 'c-42', type: 'event', name: 'purchase', ts: TS, data: { sku: 'x' } };

const parse = (value: unknown, max = MAX): Parsed =>
  parseRecord(record(typeof value === 'string' ? value : JSON.stringify(value)), max);

/** A copy of `base` without `field`. */
const without = (base: Record<string, unknown>, field: string) =>
  Object.fromEntries(Object.entries(base).filter(([k]) => k !== field));

function expectPoison(p: Parsed, errorClass: string): string {
  if (p.ok) throw new Error(`expected ${errorClass} poison, got a valid message`);
  if ('tombstone' in p) throw new Error(`expected ${errorClass} poison, got a tombstone`);
  expect(p.errorClass).toBe(errorClass);
  return p.reason;
}

describe('parseRecord: valid messages', () => {
  it('accepts a valid profile and keeps every contract field', () => {
    expect(parseRecord(record(JSON.stringify(profile)), MAX)).toEqual({ ok: true, message: profile });
  });

  it('accepts a valid event and keeps every contract field', () => {
    expect(parse(event)).toEqual({ ok: true, message: event });
  });

  it('keeps only the contract fields: an unknown top-level field is not carried along', () => {
    const p = parse({ ...event, extra: 'x' });
    expect(p).toEqual({ ok: true, message: event });
  });

  it('refuses an event without data: data is required for both types', () => {
    const p = parse(without(event, 'data'));
    expect(p).toMatchObject({ ok: false, errorClass: 'schema', reason: 'field "data" is required' });
  });

  it('accepts version 0 for a profile', () => {
    expect(parse({ ...profile, version: 0 }).ok).toBe(true);
  });
});

describe('parseRecord: invalid JSON', () => {
  it.each([
    ['truncated JSON', '{"id": "p-1", "clientId":'],
    ['plain text', 'hello'],
    ['a trailing comma', '{"id": "p-1",}'],
    ['bytes that are not UTF-8 text', Buffer.from([0xff, 0xfe, 0x00, 0x7b])],
  ])('classifies %s as invalid-json', (_, value) => {
    const reason = expectPoison(parseRecord(record(value), MAX), 'invalid-json');
    expect(reason.length).toBeGreaterThan(0);
  });

  it('says a null value is a tombstone, leaving what it means to TOMBSTONES', () => {
    expect(parseRecord(record(null), MAX)).toEqual({ ok: false, tombstone: true });
  });

  it('classifies an empty value as invalid-json', () => {
    expect(expectPoison(parseRecord(record(Buffer.alloc(0)), MAX), 'invalid-json')).toMatch(/empty/);
  });
});

describe('parseRecord: schema', () => {
  it.each([
    ['an array', [profile]],
    ['a number', 42],
    ['a string', '"profile"'],
    ['null', 'null'],
  ])('refuses a top-level JSON value that is %s', (_, value) => {
    expectPoison(parse(value), 'schema');
  });

  // [case, message, the field the reason must name]
  const cases: [string, Record<string, unknown>, string][] = [
    ['id missing', without(profile, 'id'), 'id'],
    ['id a number', { ...profile, id: 1 }, 'id'],
    ['id empty', { ...profile, id: '' }, 'id'],
    ['id over 512 bytes', { ...profile, id: 'x'.repeat(513) }, 'id'],
    ['clientId missing', without(profile, 'clientId'), 'clientId'],
    ['clientId a number', { ...event, clientId: 42 }, 'clientId'],
    ['clientId null', { ...event, clientId: null }, 'clientId'],
    ['type missing', without(profile, 'type'), 'type'],
    ['type unknown', { ...profile, type: 'Profile' }, 'type'],
    ['type a number', { ...profile, type: 1 }, 'type'],
    ['ts missing', without(profile, 'ts'), 'ts'],
    ['ts a number', { ...profile, ts: 1_764_504_000_000 }, 'ts'],
    ['ts not a timestamp', { ...event, ts: 'yesterday' }, 'ts'],
    ['ts an impossible date', { ...event, ts: '2026-13-45T12:00:00Z' }, 'ts'],
    ['version missing (profile)', without(profile, 'version'), 'version'],
    ['version a string (profile)', { ...profile, version: '17' }, 'version'],
    ['version a fraction (profile)', { ...profile, version: 1.5 }, 'version'],
    ['version negative (profile)', { ...profile, version: -1 }, 'version'],
    ['version null (profile)', { ...profile, version: null }, 'version'],
    ['name missing (event)', without(event, 'name'), 'name'],
    ['name a number (event)', { ...event, name: 7 }, 'name'],
    ['name empty (event)', { ...event, name: '' }, 'name'],
    ['data missing (profile)', without(profile, 'data'), 'data'],
    ['data an array (profile)', { ...profile, data: [1, 2] }, 'data'],
    ['data null (profile)', { ...profile, data: null }, 'data'],
    ['data a string (profile)', { ...profile, data: 'plan=pro' }, 'data'],
    ['data a number (profile)', { ...profile, data: 3 }, 'data'],
    ['data an array (event)', { ...event, data: [] }, 'data'],
    ['data null (event)', { ...event, data: null }, 'data'],
    ['data a boolean (event)', { ...event, data: true }, 'data'],
  ];

  it.each(cases)('refuses %s as schema, with a reason naming the field', (_, message, field) => {
    const reason = expectPoison(parse(message), 'schema');
    expect(reason).toContain(`"${field}"`);
    expect(reason).not.toMatch(/\n/);
  });

  it('says what it got in the reason', () => {
    expect(expectPoison(parse({ ...profile, version: '17' }), 'schema')).toContain('"17"');
    expect(expectPoison(parse({ ...profile, data: [1] }), 'schema')).toContain('an array');
    expect(expectPoison(parse(without(event, 'name')), 'schema')).toContain('nothing');
  });
});

describe('parseRecord: MAX_MESSAGE_BYTES', () => {
  /** A valid message padded with spaces to exactly `bytes` bytes. */
  const sized = (bytes: number) => {
    const json = JSON.stringify(event);
    return json + ' '.repeat(bytes - Buffer.byteLength(json));
  };

  it('accepts a message of exactly MAX_MESSAGE_BYTES', () => {
    expect(parse(sized(1000), 1000).ok).toBe(true);
  });

  it('refuses a message one byte over as too-large, naming the size and the limit', () => {
    const reason = expectPoison(parse(sized(1001), 1000), 'too-large');
    expect(reason).toContain('1001');
    expect(reason).toContain('MAX_MESSAGE_BYTES=1000');
  });

  it('counts bytes, not characters', () => {
    // 400 two-byte characters: under 1000 characters, over 1000 bytes.
    const value = JSON.stringify({ ...event, data: { text: 'é'.repeat(400) } }) + ' '.repeat(150);
    expect(value.length).toBeLessThan(1000);
    expect(Buffer.byteLength(value)).toBeGreaterThan(1000);
    expectPoison(parse(value, 1000), 'too-large');
  });

  it('checks the size before parsing: an oversized non-JSON value is too-large', () => {
    expectPoison(parse('x'.repeat(2000), 1000), 'too-large');
  });
});

describe('parseRecord: keys that could reach a prototype are ordinary data', () => {
  const withData = (dataJson: string, base: Record<string, unknown> = profile) =>
    JSON.stringify(base).replace(/"data":\{[^}]*\}/, `"data":${dataJson}`);

  const dataOf = (value: string): Record<string, unknown> => {
    const p = parse(value);
    if (!p.ok) throw new Error(`expected a valid message, got ${'reason' in p ? p.reason : 'a tombstone'}`);
    return p.message.data as Record<string, unknown>;
  };

  it.each([
    ['__proto__ at the top of data', '{"__proto__":{"polluted":1}}', '__proto__'],
    ['constructor at the top of data', '{"constructor":{"prototype":{"polluted":1}}}', 'constructor'],
    ['prototype at the top of data', '{"plan":"pro","prototype":1}', 'prototype'],
  ])('accepts %s, as an own field with its value', (_, dataJson, key) => {
    const data = dataOf(withData(dataJson));
    expect(Object.hasOwn(data, key)).toBe(true);
    expect(JSON.stringify(data[key])).toBe(JSON.stringify(JSON.parse(dataJson)[key]));
    // The data object's own prototype is untouched: __proto__ is a field, not a setter call.
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
  });

  it.each([
    ['__proto__ nested in an object', '{"a":{"b":{"__proto__":{"polluted":1}}}}'],
    ['constructor nested in an object', '{"a":{"constructor":1}}'],
    ['prototype inside an array', '{"list":[1,{"prototype":{}}]}'],
    ['__proto__ inside nested arrays', '{"m":[[],[[{"__proto__":null}]]]}'],
  ])('accepts %s, keeping the value as sent', (_, dataJson) => {
    expect(JSON.stringify(dataOf(withData(dataJson)))).toBe(dataJson);
  });

  it('accepts them in event data too', () => {
    expect(JSON.stringify(dataOf(withData('{"x":[{"constructor":1}],"__proto__":2}', event)))).toBe(
      '{"x":[{"constructor":1}],"__proto__":2}',
    );
  });

  it('does not take a top-level __proto__ for the message itself', () => {
    const value = JSON.stringify(profile).replace('{', '{"__proto__":{"type":"event","polluted":1},');
    const p = parse(value);
    expect(p).toEqual({ ok: true, message: profile });
  });

  it('leaves Object.prototype untouched after parsing payloads built to pollute it', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const payloads = [
      withData('{"__proto__":{"polluted":1}}'),
      withData('{"a":[{"__proto__":{"polluted":1}}]}'),
      JSON.stringify(profile).replace('{', '{"__proto__":{"polluted":1},'),
      withData('{"constructor":{"prototype":{"polluted":1}}}'),
    ];
    for (const value of payloads) expect(parse(value).ok).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });
});

describe('parseRecord: MAX_NESTING_DEPTH', () => {
  /** An event whose data nests `levels` objects deep: the message is levels + 1 deep. */
  const nested = (levels: number) =>
    JSON.stringify(event).replace(
      '{"sku":"x"}',
      `${'{"a":'.repeat(levels - 1)}{"a":1}${'}'.repeat(levels - 1)}`,
    );

  it('accepts a message nested exactly MAX_NESTING_DEPTH levels deep', () => {
    const value = nested(MAX_NESTING_DEPTH - 1);
    expect(nestingDepth(Buffer.from(value))).toBe(MAX_NESTING_DEPTH);
    expect(parse(value).ok).toBe(true);
  });

  it('refuses one level deeper as schema, saying why', () => {
    const reason = expectPoison(parse(nested(MAX_NESTING_DEPTH)), 'schema');
    expect(reason).toContain(`deeper than ${MAX_NESTING_DEPTH} levels`);
  });

  it('counts arrays as levels too', () => {
    const deep = JSON.stringify(event).replace(
      '{"sku":"x"}',
      `{"l":${'['.repeat(MAX_NESTING_DEPTH)}${']'.repeat(MAX_NESTING_DEPTH)}}`,
    );
    expectPoison(parse(deep), 'schema');
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const value = JSON.stringify({
      ...event,
      data: { s: `a\\"${'['.repeat(3000)}`, t: '\\', u: '{'.repeat(3000) },
    });
    expect(value.length).toBeGreaterThan(2 * MAX_NESTING_DEPTH);
    expect(nestingDepth(Buffer.from(value))).toBe(2);
    expect(parse(value).ok).toBe(true);
  });
});

describe('nestingDepth', () => {
  it.each([
    ['{}', 1],
    ['[]', 1],
    ['{"a":[1,{"b":[]}]}', 4],
    ['"[[[["', 0],
    // A string holding one backslash; then a quote and brackets inside a string; then an
    // escaped backslash right before the closing quote, followed by real brackets.
    ['{"a":"\\\\"}', 1],
    ['{"a":"\\"[["}', 1],
    ['{"a":"\\\\","b":[[]]}', 3],
    ['[[],[[]],[]]', 3],
  ])('of %s is %i', (json, depth) => {
    expect(nestingDepth(Buffer.from(json))).toBe(depth);
  });
});

describe('parseRecord: hostile nesting never throws', () => {
  const DEPTH = 100_000;
  const arrays = '['.repeat(DEPTH) + ']'.repeat(DEPTH);
  const objects = '{"a":'.repeat(DEPTH) + '1' + '}'.repeat(DEPTH);

  const outcome = (value: string) => {
    let p: Parsed | undefined;
    expect(() => {
      p = parse(value, 10 * MAX);
    }).not.toThrow();
    return p!;
  };

  it.each([
    ['100k levels of arrays as the whole value', arrays],
    ['100k levels of arrays inside data', JSON.stringify(event).replace('{"sku":"x"}', `{"deep":${arrays}}`)],
    ['100k levels of objects inside data', JSON.stringify(event).replace('{"sku":"x"}', objects)],
    [
      '100k levels with a hostile key at the bottom',
      JSON.stringify(event).replace(
        '{"sku":"x"}',
        `{"deep":${'['.repeat(DEPTH)}{"__proto__":1}${']'.repeat(DEPTH)}}`,
      ),
    ],
  ])('%s: schema poison, no throw', (_, value) => {
    expect(expectPoison(outcome(value), 'schema')).toContain('nested deeper');
  });

  it('100k unbalanced opening brackets: poison, no throw', () => {
    const p = outcome('['.repeat(DEPTH));
    expect(p.ok).toBe(false);
  });
});

describe('parseRecord: bytes that are not UTF-8', () => {
  it('is invalid-json, not a silently repaired message', () => {
    const bytes = Buffer.concat([
      Buffer.from(
        '{"id":"x","clientId":"c","type":"event","name":"n","ts":"2026-01-01T00:00:00Z","data":{"s":"',
      ),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}}'),
    ]);
    const p = parseRecord({ value: bytes }, 1 << 20);
    expect(p).toMatchObject({ ok: false, errorClass: 'invalid-json' });
  });

  it('keeps the reason on one line', () => {
    const reason = expectPoison(parseRecord({ value: Buffer.from('[\n1,\n}') }, 1 << 20), 'invalid-json');
    expect(reason).not.toMatch(/[\r\n\u2028\u2029]/);
  });
});
