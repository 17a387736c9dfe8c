import { describe, expect, it } from 'vitest';
import { bulkBody, CreateAction, createActionLine } from '../../../../src/sinks/elasticsearch/bulk.js';

describe('_bulk bodies', () => {
  const hostile = ['evt-1', 'a"b\\c', 'line\nbreak', 'üñî©ødé', '\u2028\u2029', '__proto__', '{"create":1}'];

  it('a create line serialised once is the JSON of the action object, whatever the id', () => {
    for (const id of hostile) {
      for (const index of ['events', 'events-2026.12.02', 'we"ird']) {
        const line = createActionLine(JSON.stringify(index), id);
        expect(line).toBe(JSON.stringify({ create: { _index: index, _id: id } }));
        expect(JSON.parse(line)).toEqual({ create: { _index: index, _id: id } });
      }
    }
  });

  it('puts string lines in as they are and serialises the rest, one per line, newline-terminated', () => {
    const action = createActionLine('"events"', 'a"b');
    const source = { clientId: 'c-1', data: { text: 'x\ny' } };
    const body = bulkBody([action, source, { index: { _index: 'p', _id: 'c-1' } }, { n: 1 }]).toString(
      'utf8',
    );
    expect(body.endsWith('\n')).toBe(true);
    const lines = body.slice(0, -1).split('\n');
    expect(lines).toEqual([
      action,
      JSON.stringify(source),
      '{"index":{"_index":"p","_id":"c-1"}}',
      '{"n":1}',
    ]);
  });

  it('writes a CreateAction as its create line and an object with toJSON as what that returns', () => {
    const source = { clientId: 'c-1', data: { text: 'é\n' } };
    const lazy = { toJSON: () => source };
    const body = bulkBody([new CreateAction('"events"', 'a"b'), lazy]).toString('utf8');
    expect(body).toBe(`${createActionLine('"events"', 'a"b')}\n${JSON.stringify(source)}\n`);
  });

  /** What the HTTP client sent for the joined string this replaces: its UTF-8 bytes. */
  const joined = (operations: readonly unknown[]) =>
    Buffer.from(operations.map((op) => (typeof op === 'string' ? op : JSON.stringify(op))).join('\n') + '\n');

  it('is, byte for byte, the UTF-8 of the lines joined, whatever characters they hold', () => {
    const docs = hostile.map((id, i) => ({ id, text: `${id}${'é'.repeat(i * 40)}`, emoji: '😀'.repeat(i) }));
    const operations = docs.flatMap((d) => [createActionLine('"events"', d.id), d]);
    expect(bulkBody(operations).equals(joined(operations))).toBe(true);
  });

  it('grows when the lines take more bytes than characters: a body of nothing but multi-byte text', () => {
    // Sized for one byte a character, this needs three times that: the buffer must grow, more than once.
    const operations = Array.from({ length: 50 }, (_, i) =>
      i % 2 ? { t: '€'.repeat(500 + i) } : `{"n":${i}}`,
    );
    const body = bulkBody(operations);
    expect(body.equals(joined(operations))).toBe(true);
    expect(body.length).toBeGreaterThan(3 * 25 * 500);
  });

  it('agrees with the joined string on random lines: ASCII, Latin-1, astral and lone surrogates', () => {
    let seed = 7;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed;
    };
    const alphabet = ['a', '"', '\\', '\n', 'ü', '€', '😀', '\ud800', '\udc00', '\u2028'];
    for (let round = 0; round < 200; round++) {
      const operations = Array.from({ length: 1 + (next() % 20) }, () => {
        const text = Array.from({ length: next() % 60 }, () => alphabet[next() % alphabet.length]).join('');
        return next() % 2 ? text : { text };
      });
      expect(bulkBody(operations).equals(joined(operations))).toBe(true);
    }
  });

  it('is empty for no operations', () => {
    expect(bulkBody([]).length).toBe(0);
  });
});
