import { describe, expect, it } from 'vitest';
import type { ProfileUpdate } from '../../../src/model/message.js';
import { applyUpdate, beats, mergeUpdates, type ProfileDocument } from '../../../src/model/profile-merge.js';
import { prng, shuffle } from '../../support/data/random.js';

const upd = (
  id: string,
  version: number,
  data: Record<string, unknown>,
  clientId = 'c-1',
): ProfileUpdate => ({
  id,
  clientId,
  type: 'profile',
  version,
  ts: '2026-11-30T12:00:00.000Z',
  data,
});

/** Applies updates one merged batch after another, from nothing. */
const applyAll = (batches: ProfileUpdate[][], start?: ProfileDocument) =>
  batches.reduce<ProfileDocument | undefined>(
    (doc, batch) => applyUpdate(doc, mergeUpdates(batch)).document,
    start,
  );

describe('beats', () => {
  it.each([
    [{ version: 2, id: 'a' }, { version: 1, id: 'z' }, true],
    [{ version: 1, id: 'z' }, { version: 2, id: 'a' }, false],
    [{ version: 3, id: 'b' }, { version: 3, id: 'a' }, true],
    [{ version: 3, id: 'a' }, { version: 3, id: 'b' }, false],
    [{ version: 3, id: 'a' }, { version: 3, id: 'a' }, false],
    [{ version: 0, id: '' }, undefined, true],
  ])('%o beats %o: %s', (a, b, expected) => {
    expect(beats(a, b)).toBe(expected);
  });
});

describe('mergeUpdates', () => {
  it('keeps, per field, the value of the highest version that sets it', () => {
    const merged = mergeUpdates([
      upd('u1', 1, { a: 1, b: 1 }),
      upd('u3', 3, { a: 3 }),
      upd('u2', 2, { a: 2, b: 2, c: 2 }),
    ]);
    expect(Object.fromEntries(merged.fields)).toEqual({
      a: { value: 3, stamp: { version: 3, id: 'u3' } },
      b: { value: 2, stamp: { version: 2, id: 'u2' } },
      c: { value: 2, stamp: { version: 2, id: 'u2' } },
    });
    expect(merged.version).toBe(3);
    expect(merged.clientId).toBe('c-1');
  });

  it('breaks a tie of versions by the greater id, whichever comes first', () => {
    const lo = upd('id-a', 5, { x: 'from a' });
    const hi = upd('id-b', 5, { x: 'from b' });
    expect(mergeUpdates([lo, hi]).fields.get('x')?.value).toBe('from b');
    expect(mergeUpdates([hi, lo]).fields.get('x')?.value).toBe('from b');
  });

  it('has version = the highest version even if that update sets no field', () => {
    expect(mergeUpdates([upd('a', 4, { f: 1 }), upd('b', 9, {}), upd('c', 2, { f: 0 })]).version).toBe(9);
  });

  it('refuses an empty list and updates of different clients', () => {
    expect(() => mergeUpdates([])).toThrow(RangeError);
    expect(() => mergeUpdates([upd('a', 1, {}, 'c-1'), upd('b', 2, {}, 'c-2')])).toThrow(RangeError);
  });
});

describe('applyUpdate', () => {
  it('creates the document from nothing (changed)', () => {
    const { document, changed } = applyUpdate(undefined, mergeUpdates([upd('u1', 4, { plan: 'pro' })]));
    expect(changed).toBe(true);
    expect(document).toEqual({
      clientId: 'c-1',
      version: 4,
      data: { plan: 'pro' },
      fieldVersions: { plan: { version: 4, id: 'u1' } },
    });
  });

  it('per field, the highest version wins against the stored document', () => {
    const doc = applyAll([[upd('u5', 5, { a: 5, b: 5 })]]);
    const { document, changed } = applyUpdate(doc, mergeUpdates([upd('u3', 3, { a: 3, c: 3 })]));
    expect(changed).toBe(true);
    expect(document.data).toEqual({ a: 5, b: 5, c: 3 });
    expect(document.fieldVersions).toEqual({
      a: { version: 5, id: 'u5' },
      b: { version: 5, id: 'u5' },
      c: { version: 3, id: 'u3' },
    });
  });

  it('on equal versions, the greater id wins against the stored document', () => {
    const stored = applyAll([[upd('id-b', 5, { x: 'b' })]]);
    expect(applyUpdate(stored, mergeUpdates([upd('id-a', 5, { x: 'a' })])).document.data.x).toBe('b');
    const lower = applyAll([[upd('id-a', 5, { x: 'a' })]]);
    expect(applyUpdate(lower, mergeUpdates([upd('id-b', 5, { x: 'b' })])).document.data.x).toBe('b');
  });

  it('reports changed = false for a stale update and leaves the document as it was', () => {
    const doc = applyAll([[upd('u5', 5, { a: 5, b: 5 })]])!;
    const { document, changed } = applyUpdate(doc, mergeUpdates([upd('u2', 2, { a: 2, b: 2 })]));
    expect(changed).toBe(false);
    expect(document).toEqual(doc);
  });

  it('reports changed = false when the same update is replayed', () => {
    const u = mergeUpdates([upd('u5', 5, { a: 5 })]);
    const first = applyUpdate(undefined, u).document;
    const again = applyUpdate(first, u);
    expect(again.changed).toBe(false);
    expect(again.document).toEqual(first);
  });

  it('reports changed = true when an older update sets a field nobody set yet', () => {
    const doc = applyAll([[upd('u5', 5, { a: 5 })]]);
    const { document, changed } = applyUpdate(doc, mergeUpdates([upd('u1', 1, { a: 1, z: 1 })]));
    expect(changed).toBe(true);
    expect(document.data).toEqual({ a: 5, z: 1 });
  });

  it('keeps version = the highest version applied, never lowering it', () => {
    let doc = applyAll([[upd('u7', 7, { a: 7 })]]);
    doc = applyUpdate(doc, mergeUpdates([upd('u2', 2, { b: 2 })])).document;
    expect(doc.version).toBe(7);
    const up = applyUpdate(doc, mergeUpdates([upd('u9', 9, {})]));
    expect(up.changed).toBe(true);
    expect(up.document.version).toBe(9);
  });

  it('treats hostile-looking field names as plain fields', () => {
    const names = ['hasOwnProperty', 'toString', 'valueOf', 'isPrototypeOf', 'propertyIsEnumerable'];
    const doc1 = applyAll([[upd('u1', 1, Object.fromEntries(names.map((n) => [n, `${n}@1`])))]])!;
    const { document, changed } = applyUpdate(
      doc1,
      mergeUpdates([upd('u2', 2, { hasOwnProperty: 'h@2' }), upd('u3', 3, { toString: 't@3' })]),
    );
    expect(changed).toBe(true);
    expect(document.data).toEqual({
      hasOwnProperty: 'h@2',
      toString: 't@3',
      valueOf: 'valueOf@1',
      isPrototypeOf: 'isPrototypeOf@1',
      propertyIsEnumerable: 'propertyIsEnumerable@1',
    });
    expect(Object.hasOwn(document.data, 'hasOwnProperty')).toBe(true);
    expect(document.fieldVersions.toString).toEqual({ version: 3, id: 'u3' });
    expect(document.fieldVersions.valueOf).toEqual({ version: 1, id: 'u1' });
    // A stale update of those fields loses like any other.
    const stale = applyUpdate(
      document,
      mergeUpdates([upd('u0', 0, { toString: 'old', hasOwnProperty: 'old' })]),
    );
    expect(stale.changed).toBe(false);
  });

  it('keeps a "__proto__" field (refused by parse) as an own property, not a prototype', () => {
    const data = JSON.parse('{"__proto__":{"polluted":1}}') as Record<string, unknown>;
    const { document } = applyUpdate(undefined, mergeUpdates([upd('u1', 1, data)]));
    expect(Object.getPrototypeOf(document.data)).toBe(Object.prototype);
    expect(Object.hasOwn(document.data, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('keeps stored inherited-name fields own when a later update wins them, and the key order', () => {
    const stored = JSON.parse(
      '{"clientId":"c-1","version":1,"data":{"b":1,"__proto__":{"p":1},"2":"two","a":1},' +
        '"fieldVersions":{"b":{"version":1,"id":"u1"},"__proto__":{"version":1,"id":"u1"},' +
        '"2":{"version":1,"id":"u1"},"a":{"version":1,"id":"u1"}}}',
    ) as ProfileDocument;
    const data = JSON.parse('{"__proto__":{"p":2},"constructor":"c","1":"one","z":2,"a":2}') as Record<
      string,
      unknown
    >;
    const { document, changed } = applyUpdate(stored, mergeUpdates([upd('u2', 2, data)]));
    expect(changed).toBe(true);
    for (const o of [document.data, document.fieldVersions]) {
      expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
      expect(Object.keys(o)).toEqual(['1', '2', 'b', '__proto__', 'a', 'constructor', 'z']);
      expect(Object.hasOwn(o, '__proto__') && Object.hasOwn(o, 'constructor')).toBe(true);
    }
    expect(document.data).toMatchObject({ b: 1, a: 2, z: 2, constructor: 'c', '1': 'one', '2': 'two' });
    expect(Object.getOwnPropertyDescriptor(document.data, '__proto__')?.value).toEqual({ p: 2 });
    expect(stored.data.a).toBe(1);
    expect(({} as Record<string, unknown>).p).toBeUndefined();
  });
});

describe('merge result is independent of arrival order, batching and duplicates', () => {
  const fields = ['a', 'b', 'c', 'd', 'hasOwnProperty', 'toString'];
  const updates: ProfileUpdate[] = [];
  {
    const random = prng(42);
    // Versions 1..6 with several ids per version, so that ties are common.
    for (let i = 0; i < 16; i++) {
      const version = 1 + Math.floor(random() * 6);
      const id = `u${String.fromCharCode(97 + Math.floor(random() * 26))}${i}`;
      const set = fields.filter(() => random() < 0.5);
      updates.push(upd(id, version, Object.fromEntries(set.map((f) => [f, `${id}:${f}`]))));
    }
    // Duplicates: exact copies of some updates (re-sent or replayed).
    updates.push({ ...updates[0]! }, { ...updates[3]! }, { ...updates[3]! }, { ...updates[9]! });
  }

  /** The contract, computed naively: per field, the max (version, id) among updates setting it. */
  function reference(): ProfileDocument {
    const data: Record<string, unknown> = {};
    const fieldVersions: Record<string, { version: number; id: string }> = {};
    for (const f of fields) {
      const setters = updates.filter((u) => Object.hasOwn(u.data, f));
      if (setters.length === 0) continue;
      const best = setters.reduce((x, y) =>
        y.version > x.version || (y.version === x.version && y.id > x.id) ? y : x,
      );
      data[f] = best.data[f];
      fieldVersions[f] = { version: best.version, id: best.id };
    }
    return { clientId: 'c-1', version: Math.max(...updates.map((u) => u.version)), data, fieldVersions };
  }

  it('the fixture has ties, duplicates and hostile field names', () => {
    const stamps = updates.map((u) => u.version);
    expect(new Set(stamps).size).toBeLessThan(stamps.length - 4);
    expect(new Set(updates.map((u) => u.id)).size).toBe(updates.length - 4);
    expect(updates.some((u) => Object.hasOwn(u.data, 'hasOwnProperty'))).toBe(true);
    // A tie that decides a field: two ids with the same top version both set it.
    const decidedByTie = fields.filter((f) => {
      const setters = updates.filter((u) => Object.hasOwn(u.data, f));
      const top = Math.max(...setters.map((u) => u.version));
      return new Set(setters.filter((u) => u.version === top).map((u) => u.id)).size > 1;
    });
    expect(decidedByTie.length).toBeGreaterThan(0);
  });

  it('gives the reference document for 300 random permutations, one at a time and in random batches', () => {
    const expected = reference();
    const random = prng(7);
    for (let run = 0; run < 300; run++) {
      const order = shuffle(updates, random);
      const oneByOne = applyAll(order.map((u) => [u]));
      const batches: ProfileUpdate[][] = [];
      for (let i = 0; i < order.length; ) {
        const size = 1 + Math.floor(random() * 6);
        batches.push(order.slice(i, i + size));
        i += size;
      }
      const batched = applyAll(batches);
      const allAtOnce = applyAll([order]);
      expect(oneByOne, `run ${run}, one by one`).toEqual(expected);
      expect(batched, `run ${run}, batches of ${batches.map((b) => b.length)}`).toEqual(expected);
      expect(allAtOnce, `run ${run}, one batch`).toEqual(expected);
    }
  });

  it('once every update is applied, re-applying any of them is stale (changed = false)', () => {
    const final = applyAll([updates])!;
    for (const u of updates) {
      const again = applyUpdate(final, mergeUpdates([u]));
      expect(again.changed, u.id).toBe(false);
      expect(again.document).toEqual(final);
    }
  });
});
