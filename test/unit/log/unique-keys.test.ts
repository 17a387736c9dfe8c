import { Writable } from 'node:stream';
import { logLevel } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log/logger.js';
import { kafkaLogCreator } from '../../../src/worker/kafka-log.js';
import { parseStrictObject } from '../../support/logs/strict-json.js';

/** The lines written, each checked strictly (one JSON object, unique keys at every depth). */
function capture(level = 'debug') {
  let out = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      out += chunk;
      done();
    },
  });
  const raw = () => out.split('\n').filter(Boolean);
  return {
    log: createLogger({ level }, sink),
    raw,
    lines: () => raw().map(parseStrictObject),
  };
}

describe('the strict line check', () => {
  it("refuses what pino writes for a child's binding logged again (so the tests below can fail)", () => {
    let line = '';
    const log = pino({}, { write: (s: string) => (line = s) });
    log.child({ topic: 't', partition: 0 }).warn({ topic: 't', partition: 0, offset: '5' }, 'x');
    expect(() => parseStrictObject(line.trim())).toThrow(/duplicate keys \$\.topic, \$\.partition/);
    expect(() => parseStrictObject('{"a":{"b":1,"b":2}}')).toThrow(/\$\.a\.b/);
    expect(() => parseStrictObject('[1]')).toThrow(/not a JSON object/);
    expect(() => parseStrictObject('{"a":1,}')).toThrow();
  });
});

describe('createLogger: one JSON object with unique keys per line', () => {
  it("a child bound to { topic, partition } logging { topic, partition, offset }: each key once, the call's values", () => {
    const { log, lines, raw } = capture();
    const child = log.child({ topic: 'orders', partition: 3 });
    child.warn(
      { topic: 'orders', partition: 3, offset: '42', truncateAbove: 1024 },
      'a record was too large',
    );
    expect(raw()).toHaveLength(1);
    expect(lines()[0]).toMatchObject({
      level: 40,
      service: 'rxingest',
      topic: 'orders',
      partition: 3,
      offset: '42',
      truncateAbove: 1024,
      msg: 'a record was too large',
    });
  });

  it('a child of a child bound to the same key: once, the inner binding; the call still wins over both', () => {
    const { log, lines } = capture();
    const inner = log.child({ component: 'outer', a: 1 }).child({ component: 'inner', b: 2 });
    inner.info('bound only');
    inner.info({ component: 'call', a: 3 }, 'with fields');
    const [first, second] = lines();
    expect(first).toMatchObject({ component: 'inner', a: 1, b: 2, msg: 'bound only' });
    expect(second).toMatchObject({ component: 'call', a: 3, b: 2, msg: 'with fields' });
  });

  it("fields named like pino's own keys (level, time, the base, msg beside a message) are kept under another name", () => {
    const { log, lines } = capture();
    const child = log.child({ level: 'bound', msg: 'bound' });
    child.info({ level: 'call', time: 'call', service: 'call', msg: 'call' }, 'the message');
    child.info({ msg: 'the only message' });
    const [renamed, only] = lines();
    expect(renamed).toMatchObject({
      level: 30,
      service: 'rxingest',
      msg: 'the message',
      level_: 'call',
      time_: 'call',
      service_: 'call',
      msg_: 'call',
    });
    expect(typeof renamed!.time).toBe('number');
    expect(only).toMatchObject({ level: 30, msg: 'the only message', level_: 'bound', msg_: 'bound' });
  });

  it('an error logged by itself on a child: err, its message, the bindings', () => {
    const { log, lines } = capture();
    log.child({ topic: 't' }).error(new Error('boom'));
    log.child({ topic: 't' }).error({ err: new Error('bang'), topic: 't' }, 'failed');
    const [alone, withFields] = lines();
    expect(alone).toMatchObject({ topic: 't', msg: 'boom', err: { message: 'boom', type: 'Error' } });
    expect(withFields).toMatchObject({ topic: 't', msg: 'failed', err: { message: 'bang' } });
  });

  it('format arguments and a level below the logger are as pino has them', () => {
    const { log, lines } = capture('info');
    const child = log.child({ topic: 't' });
    child.info('%d records', 3);
    child.debug({ topic: 't' }, 'not written');
    expect(lines()).toEqual([expect.objectContaining({ topic: 't', msg: '3 records' })]);
  });

  it('bindings() and setBindings() see and change the bound fields, still without doubles', () => {
    const { log, lines } = capture();
    const child = log.child({ topic: 't' });
    child.setBindings({ topic: 'u', partition: 1 });
    expect(child.bindings()).toEqual({ service: 'rxingest', topic: 'u', partition: 1 });
    child.info({ partition: 1 }, 'x');
    expect(lines()[0]).toMatchObject({ topic: 'u', partition: 1 });
  });

  it('redacts credentials in bindings as in fields', () => {
    const { log, raw } = capture();
    log.child({ options: { sasl: { password: 'bound-secret-x' } } }).info('x');
    expect(raw()[0]).not.toContain('bound-secret-x');
    expect(raw()[0]).toContain('[redacted]');
  });

  it("kafkajs's entries (its own timestamp, logger, message and whatever else) keep each key once", () => {
    const { log, lines } = capture();
    const kafkaLog = kafkaLogCreator(log.child({ component: 'worker' }))(logLevel.DEBUG);
    const entry = (level: logLevel, extra: Record<string, unknown>) =>
      kafkaLog({
        namespace: 'Consumer',
        level,
        label: 'INFO',
        log: { timestamp: '2026-01-01T00:00:00.000Z', logger: 'kafkajs', message: 'from kafkajs', ...extra },
      });
    entry(logLevel.INFO, { groupId: 'g', topic: 't', partition: 0, level: 'x', msg: 'y' });
    entry(logLevel.WARN, { error: 'e' });
    const [info, warn] = lines();
    expect(info).toMatchObject({
      level: 30,
      component: 'kafkajs',
      groupId: 'g',
      topic: 't',
      partition: 0,
      msg: 'from kafkajs',
      level_: 'x',
      msg_: 'y',
    });
    expect(warn).toMatchObject({ level: 40, component: 'kafkajs', error: 'e', msg: 'from kafkajs' });
    // pino's `time` says when; `component` says whose.
    expect(info).not.toHaveProperty('timestamp');
    expect(info).not.toHaveProperty('logger');
  });
});

describe('createLogger: odd field names', () => {
  it('a field named __proto__ is written as a field, once', () => {
    const { log, lines } = capture();
    const fields = JSON.parse('{"__proto__": {"x": 1}, "a": 2}') as Record<string, unknown>;
    log.child({ a: 1 }).info(fields, 'odd');
    expect(Object.keys(lines()[0]!)).toEqual(['level', 'time', 'service', 'a', '__proto__', 'msg']);
  });
});
