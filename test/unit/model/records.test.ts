import { describe, expect, it } from 'vitest';
import type { TriggerRule } from '../../../src/config/config.js';
import type { RawRecord, UserEvent } from '../../../src/model/message.js';
import { deadLetterRecord, matches, triggerRecords } from '../../../src/model/records.js';

const raw = (overrides: Partial<RawRecord> = {}): RawRecord => ({
  topic: 'ingest.events',
  partition: 3,
  offset: '9007199254740993',
  key: Buffer.from('c-42'),
  value: Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0x22]), // not even UTF-8
  ...overrides,
});

const event = (overrides: Partial<UserEvent> = {}): UserEvent => ({
  id: 'ev-1',
  clientId: 'c-42',
  type: 'event',
  name: 'signup',
  ts: '2026-11-30T12:00:00.000Z',
  data: { plan: 'pro' },
  ...overrides,
});

const welcome: TriggerRule = {
  id: 'welcome',
  when: { type: 'event', name: 'signup' },
  emit: 'send-welcome-email',
};
const audit: TriggerRule = { id: 'audit', when: { name: 'signup' }, emit: 'audit-signup' };
const purchase: TriggerRule = { id: 'purchase', when: { name: 'purchase' }, emit: 'thank-you' };

describe('deadLetterRecord', () => {
  it('goes to the DLQ topic with the contract headers', () => {
    const out = deadLetterRecord('ingest.dlq', raw(), 'schema', 'field "id" must be a non-empty string');
    expect(out.topic).toBe('ingest.dlq');
    expect(out.headers).toStrictEqual({
      'x-error-class': 'schema',
      'x-error-message': 'field "id" must be a non-empty string',
      'x-source-topic': 'ingest.events',
      'x-source-partition': '3',
      'x-source-offset': '9007199254740993',
    });
  });

  it('keeps the original key and value bytes exactly', () => {
    const r = raw();
    const out = deadLetterRecord('ingest.dlq', r, 'invalid-json', 'Unexpected token');
    expect(Buffer.isBuffer(out.key) && out.key.equals(Buffer.from('c-42'))).toBe(true);
    expect(Buffer.isBuffer(out.value) && out.value.equals(Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0x22]))).toBe(
      true,
    );
  });

  it('keeps a null key and a tombstone value as null', () => {
    const out = deadLetterRecord('ingest.dlq', raw({ key: null, value: null }), 'invalid-json', 'empty');
    expect(out.key).toBeNull();
    expect(out.value).toBeNull();
  });

  it.each(['invalid-json', 'schema', 'too-large', 'rejected'] as const)(
    'writes error class %s to x-error-class',
    (errorClass) => {
      expect(deadLetterRecord('dlq', raw(), errorClass, 'why').headers?.['x-error-class']).toBe(errorClass);
    },
  );

  it('has only string header values (Kafka header values are bytes)', () => {
    const out = deadLetterRecord('dlq', raw({ partition: 0, offset: '0' }), 'too-large', 'big');
    for (const v of Object.values(out.headers ?? {})) expect(typeof v).toBe('string');
    expect(out.headers?.['x-source-partition']).toBe('0');
  });

  it('bounds a very long reason, keeping its beginning', () => {
    const reason = `forbidden key at data${'[0]'.repeat(10_000)}.__proto__`;
    const message = deadLetterRecord('dlq', raw(), 'schema', reason).headers?.['x-error-message'] ?? '';
    expect(message.length).toBeLessThanOrEqual(1001);
    expect(reason.startsWith(message.slice(0, 1000))).toBe(true);
  });
});

describe('triggerRecords', () => {
  it('emits the contract value exactly, keyed by clientId, to the triggers topic', () => {
    const out = triggerRecords('ingest.triggers', [welcome], event());
    expect(out).toHaveLength(1);
    const [r] = out;
    expect(r!.topic).toBe('ingest.triggers');
    expect(r!.key).toBe('c-42');
    expect(JSON.parse(String(r!.value))).toStrictEqual({
      id: 'ev-1:welcome',
      rule: 'welcome',
      trigger: 'send-welcome-email',
      clientId: 'c-42',
      sourceId: 'ev-1',
      ts: '2026-11-30T12:00:00.000Z',
    });
  });

  it('emits one record per matching rule, in rule order, with ids <sourceId>:<ruleId>', () => {
    const out = triggerRecords('t', [audit, purchase, welcome], event({ id: 'e-9' }));
    expect(out.map((r) => JSON.parse(String(r.value)).id)).toEqual(['e-9:audit', 'e-9:welcome']);
    expect(out.map((r) => JSON.parse(String(r.value)).trigger)).toEqual([
      'audit-signup',
      'send-welcome-email',
    ]);
  });

  it('emits nothing for an event no rule matches', () => {
    expect(triggerRecords('t', [welcome, audit], event({ name: 'purchase' }))).toEqual([]);
    expect(triggerRecords('t', [], event())).toEqual([]);
  });

  it('uses the event id, clientId and ts of this event', () => {
    const out = triggerRecords(
      't',
      [purchase],
      event({ id: 'x', clientId: 'c-7', name: 'purchase', ts: '2027-01-01' }),
    );
    expect(out[0]!.key).toBe('c-7');
    expect(JSON.parse(String(out[0]!.value))).toMatchObject({
      id: 'x:purchase',
      clientId: 'c-7',
      sourceId: 'x',
      ts: '2027-01-01',
    });
  });
});

describe('matches', () => {
  it('compares only the fields named in `when`', () => {
    // Only name: any client, any id.
    expect(matches(audit, event({ clientId: 'someone-else', id: 'other' }))).toBe(true);
    // Name and clientId: both must hold.
    const vip: TriggerRule = { id: 'vip', when: { name: 'signup', clientId: 'c-1' }, emit: 'e' };
    expect(matches(vip, event({ clientId: 'c-1' }))).toBe(true);
    expect(matches(vip, event({ clientId: 'c-2' }))).toBe(false);
    expect(matches({ id: 'by-id', when: { id: 'ev-1' }, emit: 'e' }, event())).toBe(true);
  });

  it('requires every named field to be equal', () => {
    expect(matches(welcome, event({ name: 'signup' }))).toBe(true);
    expect(matches(welcome, event({ name: 'Signup' }))).toBe(false);
    expect(matches({ id: 'p', when: { type: 'profile', name: 'signup' }, emit: 'e' }, event())).toBe(false);
  });

  it('does not look into data, and does not match through inherited properties', () => {
    expect(
      matches({ id: 'd', when: { plan: 'pro' } as never, emit: 'e' }, event({ data: { plan: 'pro' } })),
    ).toBe(false);
    expect(
      matches(
        { id: 'n', when: { name: 'signup' }, emit: 'e' },
        event({ name: 'x', data: { name: 'signup' } }),
      ),
    ).toBe(false);
    const inherited = {
      id: 'i',
      when: { toString: Object.prototype.toString as unknown as string } as never,
      emit: 'e',
    };
    expect(matches(inherited, event())).toBe(false);
  });
});

describe('deadLetterRecord of a replayed record', () => {
  it('counts the attempt and keeps the replay lineage', () => {
    const out = deadLetterRecord(
      'ingest.dlq',
      raw({
        headers: {
          'x-replay-of': 'ingest.dlq/1/40',
          'x-replay-root': 'ingest.dlq/0/7',
          'x-replay-count': Buffer.from('2'),
          unrelated: 'x',
        },
      }),
      'too-large',
      'value is 2000 bytes, over MAX_MESSAGE_BYTES=1024',
    );
    expect(out.headers).toMatchObject({
      'x-error-class': 'too-large',
      'x-dead-letter-count': '3',
      'x-replay-of': 'ingest.dlq/1/40',
      'x-replay-root': 'ingest.dlq/0/7',
      'x-replay-count': '2',
    });
    expect(out.headers).not.toHaveProperty('unrelated');
  });

  it('adds nothing for a record that was never replayed, or whose count is not a number', () => {
    for (const headers of [
      undefined,
      {},
      { 'x-replay-count': 'lots' },
      { 'x-replay-count': ['1', '0'] } as never,
    ]) {
      const out = deadLetterRecord('ingest.dlq', raw({ headers }), 'schema', 'r');
      expect(Object.keys(out.headers!)).toEqual([
        'x-error-class',
        'x-error-message',
        'x-source-topic',
        'x-source-partition',
        'x-source-offset',
      ]);
    }
  });
});
