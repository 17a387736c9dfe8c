import { describe, expect, it } from 'vitest';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import { prng, shuffle } from '../../support/random.js';

const tracked = (...offsets: (string | number)[]) => {
  const t = new OffsetTracker<string>();
  for (const o of offsets) t.register(String(o));
  return t;
};

describe('OffsetTracker', () => {
  it('has nothing to commit and nothing pending before anything happens', () => {
    const t = new OffsetTracker();
    expect(t.commitOffset).toBeUndefined();
    expect(t.pending).toBe(0);
  });

  it('commits last done + 1 as records complete in order', () => {
    const t = tracked(0, 1, 2);
    expect(t.commitOffset).toBeUndefined();
    t.complete('0');
    expect(t.commitOffset).toBe('1');
    t.complete('1');
    expect(t.commitOffset).toBe('2');
    t.complete('2');
    expect(t.commitOffset).toBe('3');
  });

  it('never passes an unfinished record when completions come out of order', () => {
    const t = tracked(0, 1, 2, 3, 4);
    t.complete('3');
    expect(t.commitOffset).toBeUndefined();
    t.complete('0');
    expect(t.commitOffset).toBe('1');
    t.complete('1');
    expect(t.commitOffset).toBe('2');
    t.complete('2');
    expect(t.commitOffset).toBe('4'); // 3 was already done
    t.complete('4');
    expect(t.commitOffset).toBe('5');
  });

  it('skips gaps between registered offsets: 5, 7, 8 all done commits 9', () => {
    const t = tracked(5, 7, 8);
    t.complete('8');
    expect(t.commitOffset).toBeUndefined();
    t.complete('5');
    expect(t.commitOffset).toBe('6');
    t.complete('7');
    expect(t.commitOffset).toBe('9');
    expect(t.pending).toBe(0);
  });

  it('accepts offsets registered after everything before them completed', () => {
    const t = tracked(0);
    t.complete('0');
    t.register('10');
    expect(t.commitOffset).toBe('1');
    t.complete('10');
    expect(t.commitOffset).toBe('11');
  });

  describe('refuses misuse, and stays usable after refusing', () => {
    it.each([
      ['an offset never registered, inside a gap', '6'],
      ['an offset never registered, past the last', '9'],
      ['an offset never registered, before the first', '4'],
    ])('completing %s throws', (_, offset) => {
      const t = tracked(5, 7, 8);
      expect(() => t.complete(offset)).toThrow(/never registered/);
      t.complete('5');
      expect(t.commitOffset).toBe('6');
    });

    it('completing anything with nothing registered throws', () => {
      expect(() => new OffsetTracker().complete('0')).toThrow();
    });

    it('completing an offset twice while it is still blocked throws', () => {
      const t = tracked(0, 1);
      t.complete('1', ['first']);
      expect(() => t.complete('1', ['second'])).toThrow(/twice/);
      expect(t.complete('0')).toEqual(['first']);
      expect(t.commitOffset).toBe('2');
    });

    it('completing an offset twice after it was passed throws', () => {
      const t = tracked(0, 1);
      t.complete('0');
      expect(() => t.complete('0')).toThrow();
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
      t.register('9');
      expect(t.pending).toBe(3);
    });
  });

  it('releases payloads only when their run becomes contiguous, in offset order', () => {
    const t = tracked(0, 1, 2, 3);
    expect(t.complete('2', ['c'])).toEqual([]);
    expect(t.complete('1', ['b1', 'b2'])).toEqual([]);
    expect(t.complete('0', ['a'])).toEqual(['a', 'b1', 'b2', 'c']);
    expect(t.complete('3', [])).toEqual([]);
    expect(t.commitOffset).toBe('4');
  });

  it('releases each payload once', () => {
    const t = tracked(0, 1, 2);
    expect(t.complete('0', ['a'])).toEqual(['a']);
    expect(t.complete('2', ['c'])).toEqual([]);
    expect(t.complete('1', ['b'])).toEqual(['b', 'c']);
  });

  it('counts pending: registered and not yet passed, including done-but-blocked', () => {
    const t = tracked(0, 1, 2, 3);
    expect(t.pending).toBe(4);
    t.complete('2');
    expect(t.pending).toBe(4);
    t.complete('0');
    expect(t.pending).toBe(3);
    t.complete('1');
    expect(t.pending).toBe(1);
    t.register('9');
    expect(t.pending).toBe(2);
  });

  it('handles offsets beyond 2^53 exactly', () => {
    // As numbers, 9007199254740992 and 9007199254740993 are the same value.
    expect(Number('9007199254740993')).toBe(Number('9007199254740992'));
    const t = tracked('9007199254740992', '9007199254740993', '9007199254740995');
    expect(() => t.complete('9007199254740994')).toThrow();
    expect(t.complete('9007199254740993', ['b'])).toEqual([]);
    expect(t.commitOffset).toBeUndefined();
    expect(t.complete('9007199254740992', ['a'])).toEqual(['a', 'b']);
    expect(t.commitOffset).toBe('9007199254740994');
    t.complete('9007199254740995');
    expect(t.commitOffset).toBe('9007199254740996');
    expect(() => t.register('9007199254740995')).toThrow();
    t.register('18446744073709551615');
    t.complete('18446744073709551615');
    expect(t.commitOffset).toBe('18446744073709551616');
  });

  /**
   * The reference: registered offsets in order, the set of done ones; the
   * commit offset is one past the longest done prefix, released payloads are
   * that prefix's.
   */
  class Naive {
    readonly registered: bigint[] = [];
    readonly done = new Set<bigint>();
    passed = 0;
    released(): string[] {
      const out: string[] = [];
      while (this.passed < this.registered.length && this.done.has(this.registered[this.passed]!)) {
        out.push(`p${this.registered[this.passed]}`);
        this.passed++;
      }
      return out;
    }
    commitOffset(): string | undefined {
      let last: bigint | undefined;
      for (const o of this.registered) {
        if (!this.done.has(o)) break;
        last = o;
      }
      return last === undefined ? undefined : String(last + 1n);
    }
    pending() {
      return this.registered.length - this.passed;
    }
  }

  it.each([
    ['from 0', 0n],
    ['beyond 2^53', 2n ** 60n],
  ])(
    'matches a naive reference: 1,000 offsets with random gaps, completed in random order (%s)',
    (_, base) => {
      const random = prng(base === 0n ? 1 : 2);
      const t = new OffsetTracker<string>();
      const ref = new Naive();
      let o = base;
      for (let i = 0; i < 1000; i++) {
        o += 1n + BigInt(Math.floor(random() * 4) === 0 ? Math.floor(random() * 50) : 0);
        t.register(String(o));
        ref.registered.push(o);
      }
      expect(new Set(ref.registered.map((x, i) => x - (ref.registered[i - 1] ?? x))).size).toBeGreaterThan(2);
      for (const [step, x] of shuffle(ref.registered, random).entries()) {
        const payloads = t.complete(String(x), [`p${x}`]);
        ref.done.add(x);
        expect(payloads, `step ${step}: payloads`).toEqual(ref.released());
        expect(t.commitOffset, `step ${step}: commit offset`).toBe(ref.commitOffset());
        expect(t.pending, `step ${step}: pending`).toBe(ref.pending());
      }
      expect(t.commitOffset).toBe(String(o + 1n));
    },
  );

  it('matches the reference while registering and completing interleave over 4,000 offsets', () => {
    // Long enough for the tracker to compact its internal list several times.
    const random = prng(3);
    const t = new OffsetTracker<string>();
    const ref = new Naive();
    const inFlight: bigint[] = [];
    let o = 100n;
    let registered = 0;
    let step = 0;
    while (registered < 4000 || inFlight.length > 0) {
      if (registered < 4000 && (inFlight.length < 64 || random() < 0.5)) {
        o += 1n + BigInt(random() < 0.2 ? 3 : 0);
        t.register(String(o));
        ref.registered.push(o);
        inFlight.push(o);
        registered++;
      } else {
        const [x] = inFlight.splice(Math.floor(random() * inFlight.length), 1);
        const payloads = t.complete(String(x), [`p${x}`]);
        ref.done.add(x!);
        expect(payloads, `step ${step}: payloads`).toEqual(ref.released());
        expect(t.commitOffset, `step ${step}: commit offset`).toBe(ref.commitOffset());
        expect(t.pending, `step ${step}: pending`).toBe(ref.pending());
      }
      step++;
    }
    expect(t.pending).toBe(0);
    expect(t.commitOffset).toBe(String(o + 1n));
  });
});
