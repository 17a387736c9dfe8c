import { describe, expect, it } from 'vitest';
import { BytesInFlight, recordBytes } from '../../../../src/pushback/intake/bytes-in-flight.js';

describe('BytesInFlight', () => {
  it('counts what came in until the committed offset passes the batch', () => {
    const w = new BytesInFlight();
    w.add('9', 1_000);
    w.add('19', 2_000);
    expect(w.bytes).toBe(3_000);
    w.committed('10'); // offsets 0-9 done: the first batch leaves
    expect(w.bytes).toBe(2_000);
    w.committed('15'); // part of the second batch: still counted whole
    expect(w.bytes).toBe(2_000);
    w.committed('20');
    expect(w.bytes).toBe(0);
  });

  it('a commit that passes several batches at once takes them all out', () => {
    const w = new BytesInFlight();
    for (let i = 0; i < 5; i++) w.add(String(i * 10 + 9), 100);
    w.committed('50');
    expect(w.bytes).toBe(0);
    w.add('59', 7);
    expect(w.bytes).toBe(7);
  });

  it('compares offsets as numbers, not as text (offset 100 is past 99)', () => {
    const w = new BytesInFlight();
    w.add('99', 10);
    w.add('100', 20);
    w.committed('100');
    expect(w.bytes).toBe(20);
  });

  it('stays exact over many batches (the list of batches is trimmed as commits pass)', () => {
    const w = new BytesInFlight();
    const batches: { last: number; bytes: number }[] = [];
    let committed = 0;
    for (let i = 0; i < 10_000; i++) {
      w.add(String(i), (i % 7) + 1);
      batches.push({ last: i, bytes: (i % 7) + 1 });
      if (i % 3 === 0) {
        committed = Math.max(committed, i - 5);
        w.committed(String(committed));
      }
      const expected = batches.filter((b) => b.last >= committed).reduce((a, b) => a + b.bytes, 0);
      expect(w.bytes).toBe(expected);
    }
    w.committed('10000');
    expect(w.bytes).toBe(0);
  });

  it('a batch of only empty records adds nothing', () => {
    const w = new BytesInFlight();
    w.add('3', 0);
    expect(w.bytes).toBe(0);
    expect(recordBytes(null, null)).toBe(0);
    expect(recordBytes(Buffer.from('ab'), Buffer.from('cde'))).toBe(5);
  });
});
