import { describe, expect, it } from 'vitest';
import type { ProfileDocument } from '../../../../src/model/profile-merge.js';
import { RecentProfiles } from '../../../../src/sinks/elasticsearch/recent-profiles.js';

const doc = (clientId: string, version: number): ProfileDocument => ({
  clientId,
  version,
  data: { v: version },
  fieldVersions: { v: { version, id: `${clientId}-${version}` } },
});
const entry = (clientId: string, seqNo: number) => ({ doc: doc(clientId, seqNo), seqNo, primaryTerm: 1 });

describe('RecentProfiles', () => {
  it('gives back what was set for a client in the same index incarnation, and counts hits and misses', () => {
    const cache = new RecentProfiles(10);
    expect(cache.get('uuid-1', 'a')).toBeUndefined();
    cache.set('uuid-1', 'a', entry('a', 3));
    expect(cache.get('uuid-1', 'a')).toEqual(entry('a', 3));
    expect(cache.stats()).toEqual({ hits: 1, misses: 1, size: 1 });
  });

  it('forgets everything when the index incarnation changes (sequence numbers start over)', () => {
    const cache = new RecentProfiles(10);
    cache.set('uuid-1', 'a', entry('a', 3));
    expect(cache.get('uuid-2', 'a')).toBeUndefined();
    expect(cache.stats().size).toBe(0);
  });

  it('evicts the least recently used entry beyond its bound', () => {
    const cache = new RecentProfiles(2);
    cache.set('u', 'a', entry('a', 1));
    cache.set('u', 'b', entry('b', 1));
    cache.get('u', 'a'); // a is now the most recent
    cache.set('u', 'c', entry('c', 1));
    expect(cache.get('u', 'b')).toBeUndefined();
    expect(cache.get('u', 'a')).toBeDefined();
    expect(cache.get('u', 'c')).toBeDefined();
    expect(cache.stats().size).toBe(2);
  });

  it('forgets one client on demand', () => {
    const cache = new RecentProfiles(2);
    cache.set('u', 'a', entry('a', 1));
    cache.forget('a');
    expect(cache.get('u', 'a')).toBeUndefined();
  });

  it('refuses a bound below 1', () => {
    expect(() => new RecentProfiles(0)).toThrow(/maxEntries must be an integer >= 1, got 0/);
  });
});
