import { describe, expect, it } from 'vitest';
import { type AllocationNode, summarizeAllocations } from '../../../harness/v8-profiles.js';

const node = (
  functionName: string,
  url: string,
  selfSize: number,
  children: AllocationNode[] = [],
  lineNumber = 0,
): AllocationNode => ({ callFrame: { functionName, url, lineNumber }, selfSize, children });

describe('summarizeAllocations', () => {
  const head = node('(root)', '', 0, [
    node('decodeZigZag64', 'file:///app/node_modules/kafkajs/src/protocol/decoder.js', 600, [], 21),
    node('request', 'file:///app/node_modules/@elastic/transport/lib/Transport.js', 200),
    node('bulkBody', 'file:///app/dist/sinks/elasticsearch-bulk.js', 300, [node('join', '', 100)]),
    node('parse', 'file:///app/dist/operators/parse-records.js', 250),
    node('#onMessage', 'node:inspector', 5_000, [node('writeFileSync', 'node:fs', 5_000)]),
    node('(anonymous)', 'file:///app/bench/lib/allocation-probe.mjs', 7_000),
  ]);

  it('charges bytes to packages (scoped ones whole), our directories and V8 builtins', () => {
    const s = summarizeAllocations(head);
    expect(Object.fromEntries(s.byOwner.map((r) => [r.what, r.bytes]))).toEqual({
      kafkajs: 600,
      '@elastic/transport': 200,
      'rxingest sinks': 300,
      'rxingest operators': 250,
      '(V8 builtins: join, push, …)': 100,
    });
  });

  it('leaves out the probe’s own allocations, and everything they call', () => {
    expect(summarizeAllocations(head).totalBytes).toBe(1_450);
  });

  it('names sites by function, file and 1-based line, largest first, cut at `top`', () => {
    const s = summarizeAllocations(head, 2);
    expect(s.bySite).toEqual([
      { what: 'decodeZigZag64 kafkajs/src/protocol/decoder.js:22', bytes: 600 },
      { what: 'bulkBody dist/sinks/elasticsearch-bulk.js:1', bytes: 300 },
    ]);
  });
});
