import { describe, expect, it } from 'vitest';
import { bulkBody, createActionLine } from '../../../src/sinks/elasticsearch-bulk.js';

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
    const body = bulkBody([action, source, { index: { _index: 'p', _id: 'c-1' } }, { n: 1 }]);
    expect(body.endsWith('\n')).toBe(true);
    const lines = body.slice(0, -1).split('\n');
    expect(lines).toEqual([
      action,
      JSON.stringify(source),
      '{"index":{"_index":"p","_id":"c-1"}}',
      '{"n":1}',
    ]);
  });
});
