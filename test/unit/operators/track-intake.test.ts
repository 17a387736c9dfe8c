import { map, Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { RawRecord } from '../../../src/model/message.js';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import type { Entry } from '../../../src/model/outcome.js';
import { trackIntake } from '../../../src/operators/track-intake.js';
import { recordFactory } from '../../support/data/records.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

describe('trackIntake', () => {
  it('behaves as its marble diagram: each record becomes an open entry with its seq', () => {
    const r = recordFactory();
    const records = { a: r.event('a', 'c'), b: r.event('b', 'c'), c: r.event('c', 'c') };
    const tracker = new OffsetTracker();
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('--a--b--c--|', records);
      expectObservable(source.pipe(trackIntake(tracker))).toBe('--A--B--C--|', {
        A: { record: records.a, seq: 0 },
        B: { record: records.b, seq: 1 },
        C: { record: records.c, seq: 2 },
      });
    });
    expect(tracker.pending).toBe(3);
  });

  it('keeps the record itself on the entry, decides nothing and parses nothing', () => {
    const r = recordFactory();
    const poison = r.raw('{not json');
    const out: Entry[] = [];
    const source = new Subject<RawRecord>();
    source.pipe(trackIntake(new OffsetTracker())).subscribe((e) => out.push(e));
    source.next(poison);
    expect(out[0]!.record).toBe(poison);
    // Every entry carries all its fields (one hidden class for every stage): none is set yet.
    expect(out[0]!.message).toBeUndefined();
    expect(out[0]!.deletes).toBeUndefined();
    expect(out[0]!.outcome).toBeUndefined();
  });

  it('registers each offset as the record enters, before anything downstream can complete it', () => {
    const r = recordFactory();
    const tracker = new OffsetTracker();
    const pendingSeen: number[] = [];
    const source = new Subject<RawRecord>();
    source.pipe(trackIntake(tracker)).subscribe((e) => {
      pendingSeen.push(tracker.pending);
      // The tracker knows the entry's seq already: completing it is legal here.
      if (e.seq === 0) tracker.complete(e.seq);
    });
    source.next(r.event('a', 'c'));
    source.next(r.event('b', 'c'));
    expect(pendingSeen).toEqual([1, 1]);
    expect(tracker.commitOffset).toBe('1');
  });

  it('registers gaps too, so the commit reaches past them', () => {
    const r = recordFactory();
    const tracker = new OffsetTracker();
    const records = [r.event('a', 'c'), r.gap(4), r.event('b', 'c')]; // offsets 0, gap 1..4, 5
    const out: Entry[] = [];
    const source = new Subject<RawRecord>();
    source.pipe(trackIntake(tracker)).subscribe((e) => out.push(e));
    for (const x of records) source.next(x);
    expect(out.map((e) => [e.record.offset, e.seq])).toEqual([
      ['0', 0],
      ['4', 1],
      ['5', 2],
    ]);
    for (const e of out) tracker.complete(e.seq);
    expect(tracker.commitOffset).toBe('6');
  });

  it('continues the seqs of a tracker that registered records before (a partition resumed)', () => {
    const tracker = new OffsetTracker();
    tracker.register('41');
    const r = recordFactory();
    r.at(42);
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(
        cold('a|', { a: r.event('x', 'c') }).pipe(
          trackIntake(tracker),
          map((e) => e.seq),
        ),
      ).toBe('a|', { a: 1 });
    });
  });

  it('errors, naming the offsets, when a record does not come after the one before', () => {
    const r = recordFactory();
    const a = r.event('a', 'c');
    r.at(0);
    const again = r.event('b', 'c');
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(
        cold('ab|', { a, b: again }).pipe(
          trackIntake(new OffsetTracker()),
          map((e) => e.seq),
        ),
      ).toBe(
        'a#',
        { a: 0 },
        expect.objectContaining({ message: expect.stringMatching(/offset 0 registered after 0/) }),
      );
    });
  });
});
