import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { eventsIndexFor, eventsIndexWildcard, isEventsIndexOf } from '../../../src/model/event-index.js';

describe('eventsIndexFor', () => {
  it.each([
    ['events', '2026-11-30T12:00:00.000Z', 'events'],
    ['events-{yyyy.MM.dd}', '2026-11-30T12:00:00.000Z', 'events-2026.11.30'],
    ['events-{yyyy.MM}', '2026-11-30T12:00:00.000Z', 'events-2026.11'],
    ['events-{yyyy}', '2026-11-30T12:00:00.000Z', 'events-2026'],
    ['events-{yyyy-MM}', '2026-01-05T00:00:00Z', 'events-2026-01'],
    ['events-{yyyy-MM-dd}', '2026-01-05T00:00:00Z', 'events-2026-01-05'],
    ['ev-{yyyy.MM.dd}-eu', '2026-01-05T00:00:00Z', 'ev-2026.01.05-eu'],
  ])('%s for %s is %s', (pattern, ts, index) => {
    expect(eventsIndexFor(pattern, ts)).toBe(index);
  });

  it('takes the UTC date of a ts with an offset', () => {
    expect(eventsIndexFor('events-{yyyy.MM.dd}', '2026-12-01T01:30:00+02:00')).toBe('events-2026.11.30');
    expect(eventsIndexFor('events-{yyyy.MM.dd}', '2026-11-30T23:30:00-0100')).toBe('events-2026.12.01');
    expect(eventsIndexFor('events-{yyyy}', '2026-12-31T23:59:59.999-01:00')).toBe('events-2027');
  });

  it('reads a time without a zone as UTC, as Elasticsearch does (not as local time)', () => {
    const tz = process.env.TZ;
    process.env.TZ = 'Pacific/Kiritimati'; // UTC+14: local reading would move the day
    try {
      expect(eventsIndexFor('events-{yyyy.MM.dd}', '2026-11-30T12:00')).toBe('events-2026.11.30');
      expect(eventsIndexFor('events-{yyyy.MM.dd}', '2026-11-30T23:59:59.123456')).toBe('events-2026.11.30');
      expect(eventsIndexFor('events-{yyyy.MM.dd}', '2026-11-30')).toBe('events-2026.11.30');
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });

  it('handles nanosecond fractions and refuses a ts that is not a date', () => {
    expect(eventsIndexFor('events-{yyyy.MM.dd}', '2026-11-30T12:00:00.123456789Z')).toBe('events-2026.11.30');
    expect(() => eventsIndexFor('events-{yyyy}', 'yesterday')).toThrow(RangeError);
  });

  it('every pattern the configuration accepts produces a valid index name', () => {
    for (const pattern of [
      'events-{yyyy.MM.dd}',
      'events-{yyyy.MM}',
      'events-{yyyy}',
      'e.{yyyy-MM}',
      'e_{yyyy-MM-dd}',
    ]) {
      expect(loadConfig({ EVENTS_INDEX: pattern }).elasticsearch.eventsIndex).toBe(pattern);
      const index = eventsIndexFor(pattern, '2026-11-30T12:00:00Z');
      expect(index).toMatch(/^[a-z0-9][a-z0-9._-]*$/);
      expect(isEventsIndexOf(pattern, index)).toBe(true);
    }
  });
});

describe('eventsIndexWildcard and isEventsIndexOf', () => {
  it('replace the date by * for templates and searches', () => {
    expect(eventsIndexWildcard('events-{yyyy.MM.dd}')).toBe('events-*');
    expect(eventsIndexWildcard('ev-{yyyy}-eu')).toBe('ev-*-eu');
    expect(eventsIndexWildcard('events')).toBe('events');
  });

  it('accept only names of the pattern, not everything the wildcard matches', () => {
    expect(isEventsIndexOf('events-{yyyy.MM.dd}', 'events-2026.11.30')).toBe(true);
    expect(isEventsIndexOf('events-{yyyy.MM.dd}', 'events-archive')).toBe(false);
    expect(isEventsIndexOf('events-{yyyy.MM.dd}', 'events-2026.11')).toBe(false);
    expect(isEventsIndexOf('events-{yyyy.MM}', 'events-2026x11')).toBe(false);
    expect(isEventsIndexOf('events', 'events')).toBe(true);
    expect(isEventsIndexOf('events', 'events-1')).toBe(false);
  });
});
