import { describe, expect, it } from 'vitest';
import { classifyValue } from '../../../harness/deployment/expected-state.js';
import {
  countKinds,
  DEFAULT_BASE_TIME_MS,
  describeWorkload,
  HOSTILE_KEY_VARIANTS,
  type PoisonKind,
  planBatch,
  planWorkload,
  Rng,
  type WorkloadRecord,
  workloadRecords,
} from '../../../src/generator/workload.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const fingerprint = (records: readonly WorkloadRecord[]) =>
  records.map(
    (r) => `${r.sendAtMs}|${r.key}|${r.kind}|${r.value === null ? 'null' : r.value.toString('hex')}`,
  );

const json = (r: WorkloadRecord) => JSON.parse(r.value!.toString('utf8')) as Record<string, unknown>;

const originals = (records: readonly WorkloadRecord[]) =>
  records.filter((r) => r.kind === 'profile' || r.kind === 'event');

/** Versions of each client's profile updates, in send order. */
const versionsByClient = (records: readonly WorkloadRecord[]) => {
  const out = new Map<string, number[]>();
  for (const r of records) {
    if (r.kind !== 'profile') continue;
    const list = out.get(r.clientId!) ?? [];
    list.push(json(r).version as number);
    out.set(r.clientId!, list);
  }
  return out;
};

/** Which of HOSTILE_KEY_VARIANTS a message's data carries (own keys only), if any. */
const hostileVariant = (data: unknown): string | undefined => {
  if (typeof data !== 'object' || data === null) return undefined;
  const own = (o: unknown, k: string) => typeof o === 'object' && o !== null && Object.hasOwn(o, k);
  const d = data as Record<string, unknown>;
  for (const k of ['__proto__', 'constructor', 'prototype']) if (own(d, k)) return `data.${k}`;
  if (own(d.meta, '__proto__')) return 'data.meta.__proto__';
  if (Array.isArray(d.items) && own(d.items[1], 'constructor')) return 'data.items[1].constructor';
  return undefined;
};

const hasInversion = (vs: readonly number[]) => vs.some((v, i) => i > 0 && v < (vs[i - 1] as number));

describe('Rng', () => {
  it('is deterministic per seed and draws uuids of the 8-4-4-4-12 shape', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const xs = Array.from({ length: 100 }, () => a.u32());
    expect(Array.from({ length: 100 }, () => b.u32())).toEqual(xs);
    expect(new Rng(43).u32()).not.toBe(xs[0]);
    const ids = Array.from({ length: 1000 }, () => a.uuid());
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(1000);
  });

  it('keeps next() in [0, 1) and between() inclusive', () => {
    const r = new Rng(7);
    const seen = new Set<number>();
    let outside = 0;
    for (let i = 0; i < 10_000; i++) {
      const x = r.next();
      if (x < 0 || x >= 1) outside++;
      seen.add(r.between(3, 5));
    }
    expect(outside).toBe(0);
    expect([...seen].sort()).toEqual([3, 4, 5]);
  });
});

describe('planWorkload', () => {
  it('is deterministic: the same seed gives identical bytes, another seed different ones', () => {
    const opts = { seed: 123, count: 3000, shuffleVersions: true, poisonShare: 0.05, maxMessageBytes: 2048 };
    const a = fingerprint(planWorkload(opts));
    expect(fingerprint(planWorkload(opts))).toEqual(a);
    expect(fingerprint([...workloadRecords(opts)])).toEqual(a);
    expect(fingerprint(planWorkload({ ...opts, seed: 124 }))).not.toEqual(a);
  });

  it('never reads the clock: timestamps count from baseTimeMs', () => {
    const plan = planWorkload({ count: 500, poisonShare: 0, duplicateShare: 0 });
    for (const r of plan) {
      expect(json(r).ts).toBe(new Date(Math.floor(DEFAULT_BASE_TIME_MS + r.sendAtMs)).toISOString());
    }
    const later = planWorkload({
      count: 5,
      baseTimeMs: Date.UTC(2030, 5, 1),
      poisonShare: 0,
      duplicateShare: 0,
    });
    expect(json(later[0]!).ts).toBe('2030-06-01T00:00:00.000Z');
  });

  it('respects the shares on 10k messages', () => {
    const plan = planWorkload({ seed: 5, count: 10_000, maxMessageBytes: 4096 });
    expect(plan).toHaveLength(10_000);
    const c = countKinds(plan);
    expect(c.poison).toBe(100);
    expect(c.duplicate).toBe(200);
    const profileShare = c.profile / (c.profile + c.event);
    expect(profileShare).toBeGreaterThan(0.27);
    expect(profileShare).toBeLessThan(0.33);

    const custom = countKinds(
      planWorkload({
        seed: 6,
        count: 10_000,
        profileShare: 0.6,
        duplicateShare: 0.1,
        poisonShare: 0.05,
        maxMessageBytes: 4096,
      }),
    );
    expect(custom.poison).toBe(500);
    expect(custom.duplicate).toBe(1000);
    expect(custom.profile / (custom.profile + custom.event)).toBeCloseTo(0.6, 1);
  });

  it('paces the records over the duration at the rate, sorted by sendAtMs', () => {
    const plan = planWorkload({ seed: 2, ratePerSec: 500, durationMs: 4000, maxMessageBytes: 4096 });
    expect(plan).toHaveLength(2000);
    expect(describeWorkload({ ratePerSec: 500, durationMs: 4000 })).toMatchObject({
      total: 2000,
      durationMs: 4000,
    });
    for (let i = 1; i < plan.length; i++) {
      expect(plan[i]!.sendAtMs).toBeGreaterThanOrEqual(plan[i - 1]!.sendAtMs);
    }
    expect(plan[0]!.sendAtMs).toBe(0);
    expect(plan.at(-1)!.sendAtMs).toBeLessThan(4000);
    // Evenly spread: every second holds about a quarter of the records.
    for (let s = 0; s < 4; s++) {
      const n = plan.filter((r) => r.sendAtMs >= s * 1000 && r.sendAtMs < (s + 1) * 1000).length;
      expect(n).toBeGreaterThan(450);
      expect(n).toBeLessThan(550);
    }
  });

  it('planBatch returns exactly N records', () => {
    expect(planBatch(1)).toHaveLength(1);
    expect(planBatch(777, { seed: 3 })).toHaveLength(777);
    expect(planBatch(0)).toEqual([]);
    expect(countKinds(planBatch(50, { duplicateShare: 0, poisonShare: 0, profileShare: 1 })).profile).toBe(
      50,
    );
  });

  it('writes contract messages: key = clientId, uuid ids, every field right', () => {
    const plan = planWorkload({
      seed: 9,
      count: 5000,
      clients: 20,
      maxMessageBytes: 4096,
      hostileKeyShare: 0,
    });
    const ids = new Set<string>();
    for (const r of originals(plan)) {
      const m = json(r);
      const verdict = classifyValue(r.value);
      expect(verdict.ok, r.value!.toString()).toBe(true);
      expect(r.key).toBe(m.clientId);
      expect(r.clientId).toBe(m.clientId);
      expect(m.clientId).toMatch(/^c-00(0[1-9]|1\d|20)$/);
      expect(m.id).toBe(r.id);
      expect(m.id).toMatch(UUID);
      expect(m.type).toBe(r.kind);
      if (r.kind === 'profile') {
        expect(Object.keys(m)).toEqual(['id', 'clientId', 'type', 'version', 'ts', 'data']);
        const data = m.data as Record<string, unknown>;
        expect(Object.keys(data).length).toBeGreaterThan(0);
        for (const k of Object.keys(data)) expect(['plan', 'email', 'locale', 'tier', 'score']).toContain(k);
      } else {
        expect(['signup', 'purchase', 'login', 'logout']).toContain(m.name);
        if (m.data === undefined) expect(m.name).toBe('logout');
      }
      ids.add(r.id!);
    }
    expect(ids.size).toBe(originals(plan).length);
  });

  it('uses the given event names and wide client ids', () => {
    const plan = planWorkload({
      count: 2000,
      clients: 12_345,
      eventNames: ['view', 'click'],
      profileShare: 0,
    });
    const names = new Set(originals(plan).map((r) => json(r).name));
    expect([...names].sort()).toEqual(['click', 'view']);
    for (const r of originals(plan)) expect(r.key).toMatch(/^c-\d{5}$/);
  });

  it('re-sends duplicates with the same id and bytes, 10 ms to 5 s after the original', () => {
    const plan = planWorkload({ seed: 11, count: 10_000, duplicateShare: 0.05, maxMessageBytes: 4096 });
    const position = new Map(plan.map((r, i) => [r, i]));
    const byId = new Map<string, WorkloadRecord>();
    for (const r of originals(plan)) byId.set(r.id!, r);
    const dups = plan.filter((r) => r.kind === 'duplicate');
    expect(dups).toHaveLength(500);
    for (const d of dups) {
      const o = byId.get(d.id!)!;
      expect(o).toBeDefined();
      expect(d.value!.equals(o.value!)).toBe(true);
      expect(d.key).toBe(o.key);
      expect(d.duplicateOf).toBe(o.kind);
      const delay = d.sendAtMs - o.sendAtMs;
      expect(delay).toBeCloseTo(d.delayMs!, 6);
      expect(d.delayMs).toBeGreaterThanOrEqual(10);
      expect(d.delayMs).toBeLessThanOrEqual(5000);
      // A duplicate is never sent before its original.
      expect(position.get(d)!).toBeGreaterThan(position.get(o)!);
    }
    // Both profiles and events get duplicated.
    expect(new Set(dups.map((d) => d.duplicateOf))).toEqual(new Set(['profile', 'event']));
  });

  it('honours a custom delay range and late duplicates', () => {
    const plan = planWorkload({
      seed: 12,
      count: 4000,
      duplicateShare: 0.05,
      duplicateDelayMs: { min: 100, max: 200 },
      lateDuplicateShare: 0.01,
      lateDuplicateDelayMs: { min: 20_000, max: 30_000 },
    });
    const dups = plan.filter((r) => r.kind === 'duplicate');
    const early = dups.filter((d) => !d.late);
    const late = dups.filter((d) => d.late);
    expect(early).toHaveLength(200);
    expect(late).toHaveLength(40);
    for (const d of early) {
      expect(d.delayMs).toBeGreaterThanOrEqual(100);
      expect(d.delayMs).toBeLessThanOrEqual(200);
    }
    for (const d of late) {
      expect(d.delayMs).toBeGreaterThanOrEqual(20_000);
      expect(d.delayMs).toBeLessThanOrEqual(30_000);
    }
    expect(plan.at(-1)!.late).toBe(true);
  });

  it('grows each client’s versions 1, 2, 3, … in send order', () => {
    const plan = planWorkload({ seed: 13, count: 10_000, clients: 50, maxMessageBytes: 4096 });
    const byClient = versionsByClient(plan);
    expect(byClient.size).toBe(50);
    for (const vs of byClient.values()) expect(vs).toEqual(vs.map((_, i) => i + 1));
  });

  it('sends some clients’ updates out of version order with shuffleVersions', () => {
    const plan = planWorkload({
      seed: 14,
      count: 10_000,
      clients: 40,
      shuffleVersions: 0.25,
      maxMessageBytes: 4096,
    });
    const shape = describeWorkload({ seed: 14, count: 10_000, clients: 40, shuffleVersions: 0.25 });
    expect(shape.shuffledClients).toHaveLength(10);
    const shuffled = new Set(shape.shuffledClients);
    for (const [client, vs] of versionsByClient(plan)) {
      if (shuffled.has(client)) {
        expect(hasInversion(vs), client).toBe(true);
        // Still each version once, no repeats.
        expect(new Set(vs).size).toBe(vs.length);
        expect(Math.max(...vs)).toBeLessThanOrEqual(vs.length + 4);
      } else {
        expect(vs).toEqual(vs.map((_, i) => i + 1));
      }
    }
    // `true` shuffles half of the clients.
    expect(describeWorkload({ clients: 40, shuffleVersions: true }).shuffledClients).toHaveLength(20);
  });

  it('reuses the previous version with versionTieShare', () => {
    const plan = planWorkload({ seed: 15, count: 5000, clients: 10, profileShare: 1, versionTieShare: 0.2 });
    let ties = 0;
    for (const vs of versionsByClient(plan).values()) {
      for (let i = 1; i < vs.length; i++) {
        expect(vs[i]).toBeGreaterThanOrEqual(vs[i - 1]!);
        if (vs[i] === vs[i - 1]) ties++;
      }
    }
    expect(ties).toBeGreaterThan(500);
  });

  it('sends poison of every kind, each one poison by the contract', () => {
    const max = 4096;
    const plan = planWorkload({ seed: 16, count: 10_000, poisonShare: 0.02, maxMessageBytes: max });
    const poison = plan.filter((r) => r.kind === 'poison');
    expect(poison).toHaveLength(200);
    const kinds = new Set(poison.map((p) => p.poisonKind));
    expect([...kinds].sort()).toEqual(
      ['invalid-json', 'missing-field', 'null-value', 'oversize', 'wrong-type'].sort(),
    );
    // A null value is a tombstone: under the default TOMBSTONES it is dead-lettered as such.
    const expectedClass: Record<PoisonKind, string> = {
      'invalid-json': 'invalid-json',
      'null-value': 'tombstone',
      'missing-field': 'schema',
      'wrong-type': 'schema',
      oversize: 'too-large',
    };
    for (const p of poison) {
      const verdict = classifyValue(p.value, max);
      expect(verdict.ok, `${p.poisonKind} ${p.poisonDetail}`).toBe(false);
      if (!verdict.ok)
        expect(verdict.errorClass, `${p.poisonKind} ${p.poisonDetail}`).toBe(expectedClass[p.poisonKind!]);
      if (p.poisonKind === 'oversize') {
        expect(p.value!.length).toBeGreaterThan(max);
        expect(p.value!.length).toBeLessThanOrEqual(max + 1024);
        // Oversize and nothing else: valid under a bigger limit.
        expect(classifyValue(p.value, max * 2).ok).toBe(true);
      }
      if (p.poisonKind === 'null-value') expect(p.value).toBeNull();
    }
    // Variety inside the kinds.
    const details = (k: PoisonKind) =>
      new Set(poison.filter((p) => p.poisonKind === k).map((p) => p.poisonDetail));
    expect(details('invalid-json').size).toBeGreaterThanOrEqual(4);
    expect(details('missing-field').size).toBeGreaterThanOrEqual(4);
    expect(details('wrong-type').size).toBeGreaterThanOrEqual(8);
    expect(poison.some((p) => p.key === null)).toBe(true);
  });

  it('puts keys such as __proto__ into valid messages with hostileKeyShare, never into a prototype', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const plan = planWorkload({
      seed: 21,
      count: 5000,
      hostileKeyShare: 0.2,
      poisonShare: 0,
      duplicateShare: 0,
    });
    const sent = originals(plan);
    const found = new Map<string, number>();
    let profiles = 0;
    let events = 0;
    for (const r of sent) {
      const variant = hostileVariant(json(r).data);
      if (variant === undefined) continue;
      found.set(variant, (found.get(variant) ?? 0) + 1);
      if (r.kind === 'profile') profiles++;
      else events++;
      // Valid by the contract: ordinary field names.
      const verdict = classifyValue(r.value);
      expect(verdict.ok, r.value!.toString()).toBe(true);
    }
    const hostile = [...found.values()].reduce((a, b) => a + b, 0);
    expect(hostile / sent.length).toBeGreaterThan(0.16);
    expect(hostile / sent.length).toBeLessThan(0.24);
    expect([...found.keys()].sort()).toEqual([...HOSTILE_KEY_VARIANTS].sort());
    expect(profiles).toBeGreaterThan(0);
    expect(events).toBeGreaterThan(0);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('puts hostile keys into about 1% of valid messages by default, and none with hostileKeyShare = 0', () => {
    const share = (opts: Parameters<typeof planWorkload>[0]) => {
      const sent = originals(planWorkload({ seed: 22, count: 20_000, ...opts }));
      return sent.filter((r) => hostileVariant(json(r).data) !== undefined).length / sent.length;
    };
    const byDefault = share({});
    expect(byDefault).toBeGreaterThan(0.005);
    expect(byDefault).toBeLessThan(0.015);
    expect(share({ hostileKeyShare: 0 })).toBe(0);
    expect(() => planWorkload({ hostileKeyShare: 1.5 })).toThrow(/hostileKeyShare/);
  });

  it('can restrict the poison kinds', () => {
    const plan = planWorkload({
      count: 2000,
      poisonShare: 0.05,
      poisonKinds: ['null-value', 'missing-field'],
    });
    const kinds = new Set(plan.filter((r) => r.kind === 'poison').map((p) => p.poisonKind));
    expect([...kinds].sort()).toEqual(['missing-field', 'null-value']);
  });

  it('gives the hot clients their share with skew', () => {
    const plan = planWorkload({
      seed: 17,
      count: 10_000,
      maxMessageBytes: 4096,
      clients: 100,
      skew: { hotClients: 3, hotShare: 0.5 },
    });
    const hot = new Set(['c-0001', 'c-0002', 'c-0003']);
    const sent = originals(plan);
    const share = sent.filter((r) => hot.has(r.key!)).length / sent.length;
    expect(share).toBeGreaterThan(0.46);
    expect(share).toBeLessThan(0.54);
    // A cold client gets ~0.5/97 of the traffic, a hot one ~0.5/3.
    const c50 = sent.filter((r) => r.key === 'c-0050').length;
    expect(c50).toBeLessThan(120);
  });

  it('rejects bad options with a RangeError naming the option', () => {
    expect(() => planWorkload({ profileShare: 1.5 })).toThrow(
      /profileShare is 1.5: expected a number from 0 to 1/,
    );
    expect(() => planWorkload({ duplicateShare: 0.6, poisonShare: 0.5 })).toThrow(/poisonShare/);
    expect(() => planWorkload({ ratePerSec: 0 })).toThrow(/ratePerSec/);
    expect(() => planWorkload({ count: -1 })).toThrow(/count/);
    expect(() => planWorkload({ clients: 0 })).toThrow(/clients/);
    expect(() => planWorkload({ clients: 3, skew: { hotClients: 3, hotShare: 0.5 } })).toThrow(
      /skew.hotClients/,
    );
    expect(() => planWorkload({ duplicateDelayMs: { min: 50, max: 10 } })).toThrow(/duplicateDelayMs/);
    expect(() => planWorkload({ eventNames: [] })).toThrow(/eventNames/);
    expect(() => planWorkload({ maxMessageBytes: 10 })).toThrow(/maxMessageBytes/);
    expect(() => planWorkload({ poisonKinds: ['nope' as PoisonKind] })).toThrow(/poisonKinds/);
  });
});
