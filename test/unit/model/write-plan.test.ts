import { describe, expect, it } from 'vitest';
import type { ProfileUpdate } from '../../../src/model/message.js';
import type { Entry } from '../../../src/model/outcome.js';
import { mergeUpdates } from '../../../src/model/profile-merge.js';
import {
  contributes,
  decideAt,
  planWrites,
  writesAlone,
  writesNothing,
} from '../../../src/model/write-plan.js';
import { decidedEntry, deleteEntry, label, openEntry, recordFactory } from '../../support/data/records.js';

describe('planWrites', () => {
  it('puts open events apart and groups profile updates per client, clients in order of first appearance', () => {
    const r = recordFactory('t', 0);
    const batch = [
      openEntry(r.profile('p1', 'b', 1, { x: 1 })),
      openEntry(r.event('e1', 'a')),
      openEntry(r.profile('p2', 'a', 1, { x: 1 })),
      openEntry(r.profile('p3', 'b', 2, { y: 1 })),
      openEntry(r.event('e2', 'b')),
    ];
    expect(planWrites(batch)).toEqual({ events: [1, 4], rounds: [{ updates: [[0, 3], [2]], deletes: [] }] });
  });

  it('leaves decided entries, poison and gaps out', () => {
    const r = recordFactory('t', 0);
    const batch: Entry[] = [
      decidedEntry(r.event('e1', 'a'), { kind: 'duplicate', by: 'window' }),
      decidedEntry(r.raw('not json'), { kind: 'dead-letter', errorClass: 'invalid-json', reason: 'x' }),
      { record: r.gap(), seq: 2 },
      decidedEntry(r.tombstone('a'), { kind: 'ignored' }),
    ];
    const plan = planWrites(batch);
    expect(plan).toEqual({ events: [], rounds: [] });
    expect(writesNothing(plan)).toBe(true);
  });

  it("starts a new round after a client's tombstone, so its later updates are merged onto nothing", () => {
    const r = recordFactory('t', 0);
    const batch = [
      openEntry(r.profile('p1', 'c', 1, { x: 1 })),
      openEntry(r.profile('p2', 'd', 1, { x: 1 })),
      deleteEntry(r.tombstone('c'), 'c'),
      openEntry(r.profile('p3', 'c', 2, { x: 2 })),
      openEntry(r.profile('p4', 'd', 2, { x: 2 })),
      deleteEntry(r.tombstone('c'), 'c'),
      deleteEntry(r.tombstone('d'), 'd'),
    ];
    expect(planWrites(batch).rounds).toEqual([
      { updates: [[0], [1, 4]], deletes: [2, 6] },
      { updates: [[3]], deletes: [5] },
    ]);
  });

  it('plans a tombstone of a client without updates in the first round', () => {
    const r = recordFactory('t', 0);
    const plan = planWrites([deleteEntry(r.tombstone('c'), 'c'), openEntry(r.event('e1', 'c'))]);
    expect(plan).toEqual({ events: [1], rounds: [{ updates: [], deletes: [0] }] });
    expect(writesNothing(plan)).toBe(false);
  });
});

describe('writesAlone', () => {
  it('is true only for a batch with an open tombstone', () => {
    const r = recordFactory('t', 0);
    const event = openEntry(r.event('e1', 'a'));
    expect(writesAlone([event])).toBe(false);
    expect(writesAlone([event, deleteEntry(r.tombstone('a'), 'a')])).toBe(true);
    expect(writesAlone([event, decidedEntry(r.tombstone('a'), { kind: 'ignored' })])).toBe(false);
  });
});

describe('decideAt', () => {
  it('returns a new batch with the decided places, leaving the batch as it was', () => {
    const r = recordFactory('t', 0);
    const batch = [
      openEntry(r.event('e1', 'a')),
      openEntry(r.event('e2', 'a')),
      openEntry(r.event('e3', 'a')),
    ];
    const out = decideAt(batch, [
      { at: 2, outcome: { kind: 'indexed' } },
      { at: 0, outcome: { kind: 'duplicate', by: 'window' } },
    ]);
    expect(out.map(label)).toEqual(['e1:duplicate', 'e2:open', 'e3:indexed']);
    expect(batch.map(label)).toEqual(['e1:open', 'e2:open', 'e3:open']);
    expect(out[1]).toBe(batch[1]);
  });
});

describe('contributes', () => {
  const update = (id: string, version: number, data: Record<string, unknown>): ProfileUpdate => ({
    id,
    clientId: 'c',
    type: 'profile',
    version,
    ts: '2026-11-30T12:00:00.000Z',
    data,
  });

  it('is true for an update that wins a field within its batch, false for one outranked on every field', () => {
    const old = update('u1', 1, { plan: 'free', email: 'a@b' });
    const newer = update('u2', 2, { plan: 'pro' });
    const merged = mergeUpdates([old, newer]);
    expect(contributes(old, merged)).toBe(true);
    expect(contributes(newer, merged)).toBe(true);
    const outranked = update('u0', 0, { plan: 'trial' });
    expect(contributes(outranked, mergeUpdates([outranked, newer]))).toBe(false);
  });

  it('for an update without fields: whether it carries the merged version', () => {
    const empty = update('u1', 3, {});
    expect(contributes(empty, mergeUpdates([empty, update('u2', 2, { plan: 'pro' })]))).toBe(true);
    expect(contributes(empty, mergeUpdates([empty, update('u3', 4, { plan: 'pro' })]))).toBe(false);
  });
});
