import { map, Subject, VirtualTimeScheduler } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { decide, type Entry } from '../../../src/model/outcome.js';
import { dropRepeatsWithin } from '../../../src/operators/drop-repeats-within.js';
import { deleteEntry, label, openEntry, recordFactory } from '../../support/data/records.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** Open event entries keyed by marble character: the character is the message id. */
const events = (ids: string) => {
  const r = recordFactory();
  return Object.fromEntries(
    [...new Set(ids)].map((id): [string, Entry] => [id, openEntry(r.event(id, 'c'))]),
  );
};

describe('dropRepeatsWithin', () => {
  it('behaves as its marble diagram: a repeat inside the window is decided a window duplicate', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a--a-a--ba---b-|', events('ab'));
      expectObservable(source.pipe(dropRepeatsWithin(5), map(label))).toBe('-a--A-a--bA---b-|', {
        a: 'a:open',
        b: 'b:open',
        A: 'a:duplicate',
      });
    });
  });

  it('says who it was a duplicate of: the window, and nothing else changes', () => {
    const r = recordFactory();
    const first = openEntry(r.event('a', 'c'));
    const again = openEntry(r.event('a', 'c'));
    const out: Entry[] = [];
    const s = new Subject<Entry>();
    s.pipe(dropRepeatsWithin(1000, new VirtualTimeScheduler())).subscribe((e) => out.push(e));
    s.next(first);
    s.next(again);
    expect(out[0]).toBe(first);
    expect(out[1]).toEqual({ ...again, outcome: { kind: 'duplicate', by: 'window' } });
  });

  it('drops every copy inside the window, whatever the gap between copies: copies do not extend it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // The window starts at the admitted message, not at the last copy.
      const source = cold('a-a-a-a-a-a-|', events('a'));
      expectObservable(source.pipe(dropRepeatsWithin(6), map(label))).toBe('a-A-A-a-A-A-|', {
        a: 'a:open',
        A: 'a:duplicate',
      });
    });
  });

  it('admits an id again once its window has passed, however long after', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a 20ms a 3ms a|', events('a'));
      expectObservable(source.pipe(dropRepeatsWithin(10), map(label))).toBe('a 20ms a 3ms A|', {
        a: 'a:open',
        A: 'a:duplicate',
      });
    });
  });

  it('emits every entry, in order: nothing is dropped from the stream, only decided', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('aaaa|', events('a'));
      expectObservable(source.pipe(dropRepeatsWithin(100), map(label))).toBe('aAAA|', {
        a: 'a:open',
        A: 'a:duplicate',
      });
    });
  });

  it('passes decided entries untouched, and they do not open a window for their id', () => {
    const r = recordFactory();
    const poisonWithId = decide(openEntry(r.event('a', 'c')), {
      kind: 'dead-letter',
      errorClass: 'rejected',
      reason: 'x',
    });
    const open = openEntry(r.event('a', 'c'));
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('xa|', { x: poisonWithId, a: open });
      expectObservable(source.pipe(dropRepeatsWithin(100))).toBe('xa|', { x: poisonWithId, a: open });
    });
  });

  it('passes entries without a message (tombstones, poison, gaps) untouched', () => {
    const r = recordFactory();
    const tombstone = deleteEntry(r.tombstone('c'), 'c');
    const again = deleteEntry(r.tombstone('c'), 'c');
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('tu|', { t: tombstone, u: again }).pipe(dropRepeatsWithin(100))).toBe('tu|', {
        t: tombstone,
        u: again,
      });
    });
  });

  it('dedups profiles and events alike, by message id', () => {
    const r = recordFactory();
    const p = openEntry(r.profile('same', 'c', 1, { a: 1 }));
    const e = openEntry(r.event('same', 'c'));
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('pe|', { p, e }).pipe(dropRepeatsWithin(100), map(label))).toBe('pe|', {
        p: 'same:open',
        e: 'same:duplicate',
      });
    });
  });

  it('passes errors and completion through', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const err = new Error('fetch failed');
      expectObservable(cold('a#', events('a'), err).pipe(dropRepeatsWithin(5), map(label))).toBe(
        'a#',
        { a: 'a:open' },
        err,
      );
      expectObservable(cold<Entry>('|').pipe(dropRepeatsWithin(5))).toBe('|');
    });
  });

  it('holds one sweep timer at most while ids are held, none once they expired, and cancels it on teardown', () => {
    const scheduler = new VirtualTimeScheduler();
    const s = new Subject<Entry>();
    const r = recordFactory();
    const sub = s.pipe(dropRepeatsWithin(10, scheduler)).subscribe();
    for (const id of ['a', 'b', 'c']) s.next(openEntry(r.event(id, 'c')));
    expect(scheduler.actions).toHaveLength(1);
    scheduler.flush();
    expect(scheduler.actions).toHaveLength(0);
    s.next(openEntry(r.event('d', 'c')));
    expect(scheduler.actions).toHaveLength(1);
    sub.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
    expect(s.observed).toBe(false);
  });

  it('sets its one sweep timer for when the newest id expires, and has forgotten every id when it fires', () => {
    const scheduler = new VirtualTimeScheduler();
    const s = new Subject<Entry>();
    const r = recordFactory();
    const out: Entry[] = [];
    s.pipe(dropRepeatsWithin(10, scheduler)).subscribe((e) => out.push(e));
    s.next(openEntry(r.event('a', 'c')));
    expect(scheduler.actions[0]?.delay).toBe(10);
    scheduler.flush();
    expect(scheduler.frame).toBe(10);
    s.next(openEntry(r.event('a', 'c')));
    expect(out.map(label)).toEqual(['a:open', 'a:open']);
  });

  it('cancels the sweep timer when the source completes', () => {
    const scheduler = new VirtualTimeScheduler();
    const s = new Subject<Entry>();
    const r = recordFactory();
    s.pipe(dropRepeatsWithin(10, scheduler)).subscribe();
    s.next(openEntry(r.event('a', 'c')));
    expect(scheduler.actions).toHaveLength(1);
    s.complete();
    expect(scheduler.actions).toHaveLength(0);
  });

  it('keeps a separate window per subscription', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a|', events('a'));
      const deduped = source.pipe(dropRepeatsWithin(100), map(label));
      expectObservable(deduped).toBe('a|', { a: 'a:open' });
      expectObservable(deduped).toBe('a|', { a: 'a:open' });
    });
  });

  it('throws a RangeError when built with a window that is not a finite number > 0 ', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => dropRepeatsWithin(bad)).toThrow(RangeError);
      expect(() => dropRepeatsWithin(bad)).toThrow(/windowMs/);
    }
  });
});
