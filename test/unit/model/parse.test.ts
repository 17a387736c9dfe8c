import { describe, expect, it } from 'vitest';
import type { RawRecord } from '../../../src/model/message.js';
import { type Parsed, parseRecord } from '../../../src/model/parse.js';

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
  expect(p.errorClass).toBe(errorClass);
  return p.reason;
}

describe('parseRecord: valid messages', () => {
  it('accepts a valid profile and keeps every contract field and the record', () => {
    const r = record(JSON.stringify(profile));
    const p = parseRecord(r, MAX);
    expect(p).toEqual({ ok: true, envelope: { message: profile, record: r } });
    if (p.ok) expect(p.envelope.record).toBe(r);
  });

  it('accepts a valid event and keeps every contract field', () => {
    expect(parse(event)).toEqual({ ok: true, envelope: { message: event, record: expect.anything() } });
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

  it('classifies a tombstone (null value) as invalid-json', () => {
    expect(expectPoison(parseRecord(record(null), MAX), 'invalid-json')).toMatch(/tombstone|empty/);
  });

  it('classifies an empty value as invalid-json', () => {
    expect(expectPoison(parseRecord(record(Buffer.alloc(0)), MAX), 'invalid-json')).toMatch(/empty/);
  });

  it('keeps the record on the poison so it can be dead-lettered byte for byte', () => {
    const r = record('not json');
    const p = parseRecord(r, MAX);
    expect(!p.ok && p.record).toBe(r);
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

describe('parseRecord: keys that could reach a prototype', () => {
  const withData = (dataJson: string, base: Record<string, unknown> = profile) =>
    JSON.stringify(base).replace(/"data":\{[^}]*\}/, `"data":${dataJson}`);

  it.each([
    ['__proto__ at the top of data', '{"__proto__":{"polluted":1}}', 'data.__proto__'],
    ['constructor at the top of data', '{"constructor":{"prototype":{"polluted":1}}}', 'data.constructor'],
    ['prototype at the top of data', '{"plan":"pro","prototype":1}', 'data.prototype'],
    ['__proto__ nested in an object', '{"a":{"b":{"__proto__":{"polluted":1}}}}', 'data.a.b.__proto__'],
    ['constructor nested in an object', '{"a":{"constructor":1}}', 'data.a.constructor'],
    ['prototype inside an array', '{"list":[1,{"prototype":{}}]}', 'data.list[1].prototype'],
    ['__proto__ inside nested arrays', '{"m":[[],[[{"__proto__":null}]]]}', 'data.m[1][0][0].__proto__'],
  ])('refuses %s as schema and names where', (_, dataJson, path) => {
    const reason = expectPoison(parse(withData(dataJson)), 'schema');
    expect(reason).toContain(path);
  });

  it('refuses them in event data too', () => {
    expectPoison(parse(withData('{"x":[{"constructor":1}]}', event)), 'schema');
  });

  it('accepts keys that merely resemble them', () => {
    expect(parse(withData('{"proto":1,"constructors":2,"__proto":3,"prototypes":{"a":1}}')).ok).toBe(true);
  });

  it('leaves Object.prototype untouched after parsing a {"__proto__":{"polluted":1}} payload', () => {
    const payloads = [
      withData('{"__proto__":{"polluted":1}}'),
      withData('{"a":[{"__proto__":{"polluted":1}}]}'),
      JSON.stringify(profile).replace('{', '{"__proto__":{"polluted":1},'),
      withData('{"constructor":{"prototype":{"polluted":1}}}'),
    ];
    for (const value of payloads) parse(value);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
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

  it('100k levels of arrays as the whole value: poison, no throw', () => {
    const p = outcome(arrays);
    expect(p.ok).toBe(false);
    expect(['invalid-json', 'schema']).toContain(!p.ok && p.errorClass);
  });

  it('100k levels of arrays inside data: a result, no throw', () => {
    const p = outcome(JSON.stringify(event).replace('{"sku":"x"}', `{"deep":${arrays}}`));
    // V8's JSON.parse is iterative, so this parses; another engine may call it invalid JSON.
    expect(p.ok || p.errorClass === 'invalid-json').toBe(true);
  });

  it('100k levels of objects inside data: a result, no throw', () => {
    const p = outcome(JSON.stringify(event).replace('{"sku":"x"}', objects));
    expect(p.ok || p.errorClass === 'invalid-json').toBe(true);
  });

  it('finds a forbidden key 100k levels down without throwing', () => {
    const deep = '['.repeat(DEPTH) + '{"__proto__":1}' + ']'.repeat(DEPTH);
    const p = outcome(JSON.stringify(event).replace('{"sku":"x"}', `{"deep":${deep}}`));
    expect(p.ok).toBe(false);
    expect(['invalid-json', 'schema']).toContain(!p.ok && p.errorClass);
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
    const p = parseRecord({ topic: 't', partition: 0, offset: '0', key: null, value: bytes }, 1 << 20);
    expect(p).toMatchObject({ ok: false, errorClass: 'invalid-json' });
  });

  it('keeps the reason on one line', () => {
    const p = parseRecord(
      { topic: 't', partition: 0, offset: '0', key: null, value: Buffer.from('[\n1,\n}') },
      1 << 20,
    );
    expect(p.ok).toBe(false);
    expect(!p.ok && p.reason).not.toMatch(/\n/);
  });
});
