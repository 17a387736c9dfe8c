import { describe, expect, it } from 'vitest';
import { greater, OffsetTracker } from '../../../src/model/offset-tracker.js';
import { prng, shuffle } from '../../support/data/random.js';

/** A tracker with these offsets registered (seq 0, 1, 2, … in this order), as the intake would. */
const tracked = (...offsets: (string | number)[]) => {
  const t = new OffsetTracker<string>();
  for (const o of offsets) t.register(String(o));
  return t;
};

describe('OffsetTracker', () => {
  it('has nothing to commit, to take or pending before anything happens', () => {
    const t = new OffsetTracker();
    expect(t.commitOffset).toBeUndefined();
    expect(t.pending).toBe(0);
    expect(t.unfinished).toBe(0);
    expect(t.take()).toBeUndefined();
  });

  it('hands out sequence numbers 0, 1, 2, … in registration order, whatever the offsets', () => {
    const t = new OffsetTracker();
    expect(['5', '7', '8', '100'].map((o) => t.register(o))).toEqual([0, 1, 2, 3]);
  });

  it('counts what it registered, and only registering changes that count', () => {
    const t = tracked(5, 7);
    expect(t.registered).toBe(2);
    t.complete(0);
    t.complete(1);
    t.confirm(t.take()!.through);
    expect(t.registered).toBe(2);
    t.register('9');
    expect(t.registered).toBe(3);
  });

  it('commits last done + 1 as records complete in order', () => {
    const t = tracked(0, 1, 2);
    expect(t.commitOffset).toBeUndefined();
    t.complete(0);
    expect(t.commitOffset).toBe('1');
    t.complete(1);
    expect(t.commitOffset).toBe('2');
    t.complete(2);
    expect(t.commitOffset).toBe('3');
  });

  it('never passes an unfinished record when completions come out of order', () => {
    const t = tracked(0, 1, 2, 3, 4);
    t.complete(3);
    expect(t.commitOffset).toBeUndefined();
    t.complete(0);
    expect(t.commitOffset).toBe('1');
    t.complete(1);
    expect(t.commitOffset).toBe('2');
    t.complete(2);
    expect(t.commitOffset).toBe('4'); // 3 was already done
    t.complete(4);
    expect(t.commitOffset).toBe('5');
  });

  it('skips gaps between registered offsets: 5, 7, 8 all done commits 9', () => {
    const t = tracked(5, 7, 8);
    t.complete(2);
    expect(t.commitOffset).toBeUndefined();
    t.complete(0);
    expect(t.commitOffset).toBe('6');
    t.complete(1);
    expect(t.commitOffset).toBe('9');
    expect(t.pending).toBe(0);
  });

  it('accepts offsets registered after everything before them completed', () => {
    const t = tracked(0);
    t.complete(0);
    const seq = t.register('10');
    expect(seq).toBe(1);
    expect(t.commitOffset).toBe('1');
    t.complete(seq);
    expect(t.commitOffset).toBe('11');
  });

  describe('refuses misuse, and stays usable after refusing', () => {
    it.each([
      ['a seq past the last registered', 3],
      ['a negative seq', -1],
      ['a fractional seq', 0.5],
      ['NaN', Number.NaN],
    ])('completing %s throws', (_, seq) => {
      const t = tracked(5, 7, 8);
      expect(() => t.complete(seq)).toThrow(/never registered/);
      t.complete(0);
      expect(t.commitOffset).toBe('6');
    });

    it('completing anything with nothing registered throws', () => {
      expect(() => new OffsetTracker().complete(0)).toThrow(/never registered/);
    });

    it('completing a record twice while it is still blocked throws, and keeps the first payloads', () => {
      const t = tracked(0, 1);
      t.complete(1, ['first']);
      expect(() => t.complete(1, ['second'])).toThrow(/twice/);
      t.complete(0);
      expect(t.take()).toEqual({ offset: '2', payloads: ['first'], through: 2 });
    });

    it('completing a record twice after it was passed throws', () => {
      const t = tracked(0, 1);
      t.complete(0);
      expect(() => t.complete(0)).toThrow(/twice/);
      expect(t.commitOffset).toBe('1');
      expect(t.pending).toBe(1);
    });

    it.each([
      ['the same offset', '8'],
      ['a lower offset', '3'],
    ])('registering %s again throws', (_, offset) => {
      const t = tracked(5, 8);
      expect(() => t.register(offset)).toThrow(/must increase/);
      expect(t.pending).toBe(2);
      expect(t.register('9')).toBe(2);
      expect(t.pending).toBe(3);
    });

    it('orders offsets by value, not as text: 10 may follow 9, 9 may not follow 10', () => {
      const t = tracked(9);
      expect(t.register('10')).toBe(1);
      expect(() => t.register('9')).toThrow(/must increase/);
    });

    it('refuses to confirm past what was taken', () => {
      const t = tracked(0, 1);
      t.complete(0);
      expect(() => t.confirm(1)).toThrow(/past what was taken/);
      const taken = t.take()!;
      t.confirm(taken.through);
      expect(t.unfinished).toBe(1);
    });
  });

  describe('take and confirm', () => {
    it('takes what became committable since the last take: the offset, its payloads, and how far to confirm', () => {
      const t = tracked(0, 1, 2, 3);
      t.complete(2, ['c']);
      t.complete(1, ['b1', 'b2']);
      expect(t.take()).toBeUndefined(); // 0 is still open: nothing is committable
      t.complete(0, ['a']);
      expect(t.take()).toEqual({ offset: '3', payloads: ['a', 'b1', 'b2', 'c'], through: 3 });
      expect(t.take()).toBeUndefined();
      t.complete(3, []);
      expect(t.take()).toEqual({ offset: '4', payloads: [], through: 4 });
    });

    it('releases each payload once, in offset order, however the completions interleave with takes', () => {
      const t = tracked(0, 1, 2);
      t.complete(0, ['a']);
      expect(t.take()?.payloads).toEqual(['a']);
      t.complete(2, ['c']);
      expect(t.take()).toBeUndefined();
      t.complete(1, ['b']);
      expect(t.take()?.payloads).toEqual(['b', 'c']);
    });

    it('counts pending (not yet committable) and unfinished (not yet confirmed durable) apart', () => {
      const t = tracked(0, 1, 2, 3);
      expect([t.pending, t.unfinished]).toEqual([4, 4]);
      t.complete(2);
      expect([t.pending, t.unfinished]).toEqual([4, 4]); // done but blocked by 0
      t.complete(0);
      expect([t.pending, t.unfinished]).toEqual([3, 4]);
      t.complete(1);
      expect([t.pending, t.unfinished]).toEqual([1, 4]); // committable, not committed
      const taken = t.take()!;
      expect([t.pending, t.unfinished]).toEqual([1, 4]); // a commit in flight still holds them
      t.confirm(taken.through);
      expect([t.pending, t.unfinished]).toEqual([1, 1]);
      t.register('9');
      expect([t.pending, t.unfinished]).toEqual([2, 2]);
    });

    it('ignores a confirm older than one already made', () => {
      const t = tracked(0, 1);
      t.complete(0);
      const first = t.take()!;
      t.complete(1);
      const second = t.take()!;
      t.confirm(second.through);
      t.confirm(first.through);
      expect(t.unfinished).toBe(0);
    });
  });

  it('handles offsets beyond 2^53 exactly', () => {
    // As numbers, 9007199254740992 and 9007199254740993 are the same value.
    expect(Number('9007199254740993')).toBe(Number('9007199254740992'));
    const t = tracked('9007199254740992', '9007199254740993', '9007199254740995');
    t.complete(1, ['b']);
    expect(t.commitOffset).toBeUndefined();
    t.complete(0, ['a']);
    expect(t.commitOffset).toBe('9007199254740994');
    expect(t.take()).toEqual({ offset: '9007199254740994', payloads: ['a', 'b'], through: 2 });
    t.complete(2);
    expect(t.commitOffset).toBe('9007199254740996');
    expect(() => t.register('9007199254740995')).toThrow(/must increase/);
    expect(() => t.register('9007199254740994')).toThrow(/must increase/);
    t.complete(t.register('18446744073709551615'));
    expect(t.commitOffset).toBe('18446744073709551616');
  });

  it.each([
    ['9007199254740990', '9007199254740991'],
    ['9007199254740991', '9007199254740992'],
    ['9007199254740992', '9007199254740993'],
  ])('commits one past %s exactly at the edge of safe integers', (offset, next) => {
    const t = tracked(offset);
    t.complete(0);
    expect(t.commitOffset).toBe(next);
  });

  it('compares decimal offsets by value, not as text', () => {
    expect(greater('10', '9')).toBe(true);
    expect(greater('9', '10')).toBe(false);
    expect(greater('9007199254740993', '9007199254740992')).toBe(true);
    expect(greater('5', '5')).toBe(false);
  });

  /**
   * The reference: registered offsets in order and which of them are done; the commit
   * offset is one past the longest done prefix, released payloads are that prefix's.
   */
  class Naive {
    readonly registered: bigint[] = [];
    readonly done = new Set<number>();
    /** How far the done prefix reaches (records below it are committable). */
    passed = 0;
    /** How far takes reached, and how far confirms. */
    taken = 0;
    confirmed = 0;
    advance(): void {
      while (this.passed < this.registered.length && this.done.has(this.passed)) this.passed++;
    }
    /** What a take returns now: the payloads of the records passed since the last take. */
    take(): { offset: string; payloads: string[]; through: number } | undefined {
      if (this.passed === this.taken) return undefined;
      const payloads = this.registered.slice(this.taken, this.passed).map((o) => `p${o}`);
      this.taken = this.passed;
      return { offset: String(this.registered[this.passed - 1]! + 1n), payloads, through: this.passed };
    }
    commitOffset(): string | undefined {
      return this.passed === 0 ? undefined : String(this.registered[this.passed - 1]! + 1n);
    }
    pending(): number {
      return this.registered.length - this.passed;
    }
    unfinished(): number {
      return this.registered.length - this.confirmed;
    }
  }

  /** One step: complete `seq`, then now and then take (and maybe confirm), comparing everything. */
  const step = (t: OffsetTracker<string>, ref: Naive, seq: number, random: () => number, at: string) => {
    t.complete(seq, [`p${ref.registered[seq]}`]);
    ref.done.add(seq);
    ref.advance();
    expect(t.commitOffset, `${at}: commit offset`).toBe(ref.commitOffset());
    expect(t.pending, `${at}: pending`).toBe(ref.pending());
    if (random() < 0.3) {
      const taken = t.take();
      expect(taken, `${at}: take`).toEqual(ref.take());
      if (taken !== undefined && random() < 0.7) {
        t.confirm(taken.through);
        ref.confirmed = taken.through;
      }
    }
    expect(t.unfinished, `${at}: unfinished`).toBe(ref.unfinished());
  };

  it.each([
    ['from 0', 0n, 1],
    ['beyond 2^53', 2n ** 60n, 2],
  ])(
    'matches a naive reference: 1,000 offsets with random gaps, completed in random order (%s)',
    (_, base, seed) => {
      const random = prng(seed);
      const t = new OffsetTracker<string>();
      const ref = new Naive();
      let o = base;
      for (let i = 0; i < 1000; i++) {
        o += 1n + BigInt(Math.floor(random() * 4) === 0 ? Math.floor(random() * 50) : 0);
        expect(t.register(String(o))).toBe(i);
        ref.registered.push(o);
      }
      // The offsets really have gaps of several sizes.
      expect(new Set(ref.registered.map((x, i) => x - (ref.registered[i - 1] ?? x))).size).toBeGreaterThan(2);
      const order = shuffle(
        ref.registered.map((_, i) => i),
        random,
      );
      for (const [k, seq] of order.entries()) step(t, ref, seq, random, `step ${k}`);
      expect(t.commitOffset).toBe(String(o + 1n));
      const last = t.take();
      expect(last).toEqual(ref.take());
      if (last) t.confirm(last.through);
      expect(t.unfinished).toBe(0);
    },
  );

  it('matches the reference while registering and completing interleave over 4,000 offsets', () => {
    // Long enough for the tracker to compact its internal arrays several times.
    const random = prng(3);
    const t = new OffsetTracker<string>();
    const ref = new Naive();
    const inFlight: number[] = [];
    let o = 100n;
    let k = 0;
    while (ref.registered.length < 4000 || inFlight.length > 0) {
      if (ref.registered.length < 4000 && (inFlight.length < 64 || random() < 0.5)) {
        o += 1n + BigInt(random() < 0.2 ? 3 : 0);
        const seq = t.register(String(o));
        expect(seq).toBe(ref.registered.length);
        ref.registered.push(o);
        inFlight.push(seq);
      } else {
        const [seq] = inFlight.splice(Math.floor(random() * inFlight.length), 1);
        step(t, ref, seq!, random, `step ${k}`);
      }
      k++;
    }
    expect(t.pending).toBe(0);
    expect(t.commitOffset).toBe(String(o + 1n));
  });

  it('after compacting, still refuses records completed long ago and keeps the last offset', () => {
    const t = new OffsetTracker<string>();
    for (let i = 0; i < 5000; i++) t.complete(t.register(String(i * 2)));
    expect(t.commitOffset).toBe('9999');
    expect(() => t.complete(0)).toThrow(/twice|never registered/);
    expect(() => t.complete(4999)).toThrow(/twice|never registered/);
    t.complete(t.register('20000'));
    expect(t.take()).toEqual({ offset: '20001', payloads: [], through: 5001 });
  });
});
