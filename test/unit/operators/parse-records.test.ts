import { from, map, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { TombstonePolicy } from '../../../src/config/config.js';
import type { RawRecord } from '../../../src/model/message.js';
import type { Entry } from '../../../src/model/outcome.js';
import { MAX_NESTING_DEPTH } from '../../../src/model/parse.js';
import { parseRecords } from '../../../src/operators/parse-records.js';
import { label, recordFactory, TS } from '../../support/data/records.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** Entries as trackIntake makes them: the record and its seq. */
const entry = (record: RawRecord, seq = Number(record.offset)): Entry => ({ record, seq });

/** Runs parseRecords over these records synchronously and returns the entries it emits. */
function parsed(
  records: RawRecord[],
  tombstones: TombstonePolicy = 'dead-letter',
  maxMessageBytes = 1 << 20,
): Entry[] {
  let out: Entry[] = [];
  from(records.map((r) => entry(r)))
    .pipe(parseRecords({ maxMessageBytes, tombstones }), toArray())
    .subscribe((x) => {
      out = x;
    });
  return out;
}

const only = (record: RawRecord, tombstones?: TombstonePolicy, max?: number) =>
  parsed([record], tombstones, max)[0]!;

describe('parseRecords', () => {
  it('behaves as its marble diagram (TOMBSTONES=delete)', () => {
    const r = recordFactory();
    const records = {
      a: r.event('a', 'c-1'),
      b: r.raw('{not json', 'c-1'),
      c: r.profile('c', 'c-1', 1, { plan: 'pro' }),
      t: r.tombstone('c-1'),
    };
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('--a--b--c--t--|', {
        a: entry(records.a),
        b: entry(records.b),
        c: entry(records.c),
        t: entry(records.t),
      });
      expectObservable(
        source.pipe(parseRecords({ maxMessageBytes: 1 << 20, tombstones: 'delete' }), map(label)),
      ).toBe('--A--x--C--T--|', { A: 'a:open', x: '@1:dead-letter', C: 'c:open', T: 'del(c-1):open' });
    });
  });

  it('gives a valid record its message, keeping record and seq', () => {
    const r = recordFactory();
    const record = r.event('e-1', 'c-1', 'signup', { sku: 'x' });
    const e = parsed([record])[0]!;
    expect(e).toEqual({
      record,
      seq: 0,
      message: { id: 'e-1', clientId: 'c-1', type: 'event', name: 'signup', ts: TS, data: { sku: 'x' } },
    });
    expect(e.record).toBe(record);
    expect(e.outcome).toBeUndefined();
  });

  it('keeps offset order, one entry per record, synchronously', () => {
    const r = recordFactory();
    const records = [r.event('a', 'c'), r.raw('x'), r.tombstone('c'), r.gap(3), r.profile('p', 'c', 1, {})];
    expect(parsed(records).map((e) => e.seq)).toEqual([0, 1, 2, 5, 6]);
  });

  describe('poison is a dead letter with its class and reason', () => {
    it.each([
      ['not JSON', '{not json', 'invalid-json'],
      ['empty', '', 'invalid-json'],
      ['not an object', '[1,2]', 'schema'],
      [
        'without a field',
        JSON.stringify({ id: 'x', clientId: 'c', type: 'event', ts: TS, data: {} }),
        'schema',
      ],
      [
        'with a wrong type',
        JSON.stringify({ id: 'x', clientId: 'c', type: 'profile', version: '1', ts: TS, data: {} }),
        'schema',
      ],
    ])('a value %s', (_, value, errorClass) => {
      const e = only(recordFactory().raw(value, 'c'));
      expect(e.outcome).toMatchObject({ kind: 'dead-letter', errorClass });
      expect(e.message).toBeUndefined();
      expect((e.outcome as { reason: string }).reason.length).toBeGreaterThan(0);
    });

    it('a value over MAX_MESSAGE_BYTES is too-large, naming the size and the limit', () => {
      const value = JSON.stringify({
        id: 'x',
        clientId: 'c',
        type: 'event',
        name: 'n',
        ts: TS,
        data: { s: 'x'.repeat(200) },
      });
      const e = only(recordFactory().raw(value, 'c'), 'dead-letter', 100);
      expect(e.outcome).toMatchObject({ kind: 'dead-letter', errorClass: 'too-large' });
      expect((e.outcome as { reason: string }).reason).toContain('MAX_MESSAGE_BYTES=100');
    });

    it('bytes that are not UTF-8 are invalid-json, not a repaired message', () => {
      const value = Buffer.concat([
        Buffer.from(`{"id":"x","clientId":"c","type":"event","name":"n","ts":"${TS}","data":{"s":"`),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}}'),
      ]);
      expect(only(recordFactory().raw(value, 'c')).outcome).toMatchObject({
        kind: 'dead-letter',
        errorClass: 'invalid-json',
      });
    });

    it(`a message nested deeper than ${MAX_NESTING_DEPTH} levels is schema poison, and deep nesting never throws`, () => {
      const deep = (levels: number) =>
        JSON.stringify({ id: 'x', clientId: 'c', type: 'event', name: 'n', ts: TS, data: {} }).replace(
          '"data":{}',
          `"data":${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`,
        );
      expect(only(recordFactory().raw(deep(MAX_NESTING_DEPTH - 1))).outcome).toBeUndefined();
      expect(only(recordFactory().raw(deep(MAX_NESTING_DEPTH))).outcome).toMatchObject({
        kind: 'dead-letter',
        errorClass: 'schema',
      });
      expect(only(recordFactory().raw(deep(100_000)), 'dead-letter', 10 << 20).outcome).toMatchObject({
        kind: 'dead-letter',
        errorClass: 'schema',
      });
    });
  });

  it('accepts __proto__, constructor and prototype in data as ordinary fields', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const value = `{"id":"h","clientId":"c","type":"profile","version":1,"ts":"${TS}","data":{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"polluted":1}},"prototype":1,"plan":"pro"}}`;
    const e = only(recordFactory().raw(value, 'c'));
    expect(e.outcome).toBeUndefined();
    const data = e.message!.data;
    expect(Object.keys(data)).toEqual(['__proto__', 'constructor', 'prototype', 'plan']);
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(({} as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
  });

  it('decides a gap skipped, whatever its value', () => {
    const r = recordFactory();
    const gap = r.gap(10);
    expect(only(gap)).toEqual({ record: gap, seq: 9, outcome: { kind: 'skipped' } });
    for (const policy of ['dead-letter', 'ignore', 'delete'] as const) {
      expect(only({ ...gap, value: Buffer.from('{not json') }, policy).outcome).toEqual({ kind: 'skipped' });
    }
  });

  describe('tombstones follow TOMBSTONES', () => {
    it('dead-letter (the default): a dead letter of class tombstone', () => {
      const e = only(recordFactory().tombstone('c-1'), 'dead-letter');
      expect(e.outcome).toMatchObject({ kind: 'dead-letter', errorClass: 'tombstone' });
      expect((e.outcome as { reason: string }).reason).toContain('TOMBSTONES=dead-letter');
      expect(e.deletes).toBeUndefined();
    });

    it('ignore: decided ignored, with or without a key', () => {
      expect(only(recordFactory().tombstone('c-1'), 'ignore').outcome).toEqual({ kind: 'ignored' });
      expect(only(recordFactory().tombstone(null), 'ignore').outcome).toEqual({ kind: 'ignored' });
    });

    it('delete: left open, deleting the client named by the key', () => {
      const e = only(recordFactory().tombstone('c-42'), 'delete');
      expect(e.outcome).toBeUndefined();
      expect(e.deletes).toBe('c-42');
      expect(e.message).toBeUndefined();
    });

    it('delete: a key that names a client in any script is that client', () => {
      expect(only(recordFactory().tombstone('клиент-7'), 'delete').deletes).toBe('клиент-7');
      expect(only(recordFactory().tombstone('x'.repeat(512)), 'delete').deletes).toBe('x'.repeat(512));
    });

    it.each([
      ['no key', null],
      ['an empty key', Buffer.alloc(0)],
      ['a key that is not UTF-8', Buffer.from([0xff, 0xfe])],
      ['a key over 512 bytes', 'x'.repeat(513)],
    ])('delete: a tombstone with %s is a dead letter of class tombstone, naming why', (_, key) => {
      const e = only(recordFactory().tombstone(key), 'delete');
      expect(e.outcome).toMatchObject({ kind: 'dead-letter', errorClass: 'tombstone' });
      expect((e.outcome as { reason: string }).reason).toMatch(/key is not a client id/);
      expect(e.deletes).toBeUndefined();
    });

    it('an empty value is not a tombstone: it is poison under every policy', () => {
      for (const policy of ['dead-letter', 'ignore', 'delete'] as const) {
        expect(only(recordFactory().raw(Buffer.alloc(0), 'c'), policy).outcome).toMatchObject({
          kind: 'dead-letter',
          errorClass: 'invalid-json',
        });
      }
    });
  });
});
