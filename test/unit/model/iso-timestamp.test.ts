import { describe, expect, it } from 'vitest';
import { isIsoTimestamp } from '../../../src/model/iso-timestamp.js';
import { prng } from '../../support/data/random.js';

/** What the parser checked before: the shape, then V8's own reader. */
const SHAPE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const byDateParse = (ts: string) => SHAPE.test(ts) && !Number.isNaN(Date.parse(ts));

/** Strings of the contract's shape with every field drawn a little past its range. */
function candidates(count: number, seed: number, year: () => number): string[] {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pad = (v: number, width = 2) => String(v).padStart(width, '0');
  const out: string[] = [];
  for (let k = 0; k < count; k++) {
    let s = `${pad(year(), 4)}-${pad(int(15))}-${pad(int(34))}`;
    if (int(5) > 0) {
      s += `T${pad(int(27))}:${pad(int(62))}`;
      if (int(4) > 0) {
        s += `:${pad(int(62))}`;
        if (int(2) > 0)
          s += `.${Array.from({ length: 1 + int(9) }, () => (int(3) > 0 ? 0 : int(10))).join('')}`;
      }
      const zone = int(4);
      if (zone === 1) s += 'Z';
      else if (zone > 1)
        s += `${int(2) > 0 ? '+' : '-'}${pad(int(26))}${int(2) > 0 ? ':' : ''}${pad(int(62))}`;
    }
    out.push(s);
  }
  return out;
}

describe('isIsoTimestamp', () => {
  it.each([
    '2026-11-30',
    '2026-11-30T12:00Z',
    '2026-11-30T12:00:00.000Z',
    '2026-11-30T12:00:00.123456789+05:30',
    '2026-11-30T12:00:00-0800',
    '2026-12-31T24:00:00.000Z',
    '2026-02-30T00:00:00Z',
  ])('accepts %s, as Date.parse does', (ts) => {
    expect(isIsoTimestamp(ts)).toBe(true);
    expect(byDateParse(ts)).toBe(true);
  });

  it.each([
    ['a month out of range', '2026-13-01T00:00:00Z'],
    ['day 0', '2026-01-00'],
    ['day 32', '2026-01-32T00:00:00Z'],
    ['minute 60', '2026-01-01T23:60Z'],
    ['second 60', '2026-01-01T23:59:60Z'],
    ['24:00 with a second past it', '2026-01-01T24:00:01Z'],
    ['24:00 with a fraction past it', '2026-01-01T24:00:00.001Z'],
    ['an offset of 24 hours', '2026-01-01T00:00+24:00'],
    ['an offset of 60 minutes', '2026-01-01T00:00+05:60'],
    ['another shape', '30/11/2026'],
    ['an empty string', ''],
  ])('refuses %s (%s), as Date.parse does', (_, ts) => {
    expect(isIsoTimestamp(ts)).toBe(false);
    expect(byDateParse(ts)).toBe(false);
  });

  it('agrees with Date.parse on 200,000 strings of the shape, years 1000–9999', () => {
    const random = prng(11);
    const mismatches = candidates(200_000, 7, () => 1000 + Math.floor(random() * 9000)).filter(
      (ts) => isIsoTimestamp(ts) !== byDateParse(ts),
    );
    expect(mismatches).toEqual([]);
  });

  it('accepts nothing that Date.parse refuses, whatever the year (it is stricter only where V8 falls back to its legacy reader)', () => {
    const random = prng(12);
    const strings = candidates(200_000, 8, () => Math.floor(random() * 10_000));
    expect(strings.filter((ts) => isIsoTimestamp(ts) && !byDateParse(ts))).toEqual([]);
    const stricter = strings.filter((ts) => !isIsoTimestamp(ts) && byDateParse(ts));
    // Those are all years V8's legacy reader takes for something else (0001-0031 as a day or month).
    expect(stricter.every((ts) => Number(ts.slice(0, 4)) < 100)).toBe(true);
  });
});
