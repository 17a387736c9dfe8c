import { describe, expect, it } from 'vitest';
import {
  classifyValue,
  expectedState,
  type TriggerRule,
  toPlain,
} from '../../../harness/deployment/expected-state.js';
import { countKinds, planWorkload, Rng } from '../../../src/generator/workload.js';

const buf = (o: unknown) => Buffer.from(JSON.stringify(o));

const profile = (id: string, clientId: string, version: number, data: Record<string, unknown>) =>
  buf({ id, clientId, type: 'profile', version, ts: '2026-01-01T00:00:00.000Z', data });

const event = (id: string, clientId: string, name: string, data: Record<string, unknown> = {}) =>
  buf({ id, clientId, type: 'event', ts: '2026-01-02T03:04:05.000Z', name, data });

const shuffled = <T>(items: readonly T[], seed: number): T[] => new Rng(seed).shuffle([...items]);

/** Profiles as plain, comparable objects. */
const profilesOf = (values: Iterable<Buffer | null>) =>
  Object.fromEntries([...expectedState(values).profiles].map(([k, v]) => [k, toPlain(v)]));

const merged = [
  profile('00000000-0000-4000-8000-000000000001', 'c-1', 1, { plan: 'free', email: 'a@x.io', tier: 1 }),
  profile('00000000-0000-4000-8000-000000000003', 'c-1', 3, { plan: 'pro' }),
  profile('00000000-0000-4000-8000-000000000002', 'c-1', 2, { plan: 'team', locale: 'fr-FR', tier: 2 }),
  // Equal versions: the greater id wins, whatever the order.
  profile('00000000-0000-4000-8000-00000000000a', 'c-1', 4, { score: 10 }),
  profile('00000000-0000-4000-8000-00000000000b', 'c-1', 4, { score: 20, email: 'b@x.io' }),
  profile('00000000-0000-4000-8000-000000000009', 'c-1', 4, { score: 5 }),
  profile('00000000-0000-4000-8000-000000000005', 'c-2', 7, { plan: 'enterprise' }),
  profile('00000000-0000-4000-8000-000000000006', 'c-2', 0, { plan: 'free', locale: 'ja-JP' }),
];

const expectedProfiles = {
  'c-1': {
    version: 4,
    data: { plan: 'pro', email: 'b@x.io', tier: 2, locale: 'fr-FR', score: 20 },
  },
  'c-2': { version: 7, data: { plan: 'enterprise', locale: 'ja-JP' } },
};

describe('expectedState: the merge rule', () => {
  it('takes each field from the highest version, equal versions by the greater id', () => {
    expect(profilesOf(merged)).toEqual(expectedProfiles);
  });

  it('does not depend on the arrival order', () => {
    for (let seed = 1; seed <= 30; seed++)
      expect(profilesOf(shuffled(merged, seed))).toEqual(expectedProfiles);
    expect(profilesOf([...merged].reverse())).toEqual(expectedProfiles);
  });

  it('is not changed by duplicates and replays', () => {
    const state = expectedState([...merged, merged[0]!, merged[3]!, ...merged]);
    expect(state.duplicates).toBe(merged.length + 2);
    expect(state.accepted).toBe(merged.length * 2 + 2);
    expect(state.conflictingIds).toEqual([]);
    expect(Object.fromEntries([...state.profiles].map(([k, v]) => [k, toPlain(v)]))).toEqual(
      expectedProfiles,
    );
  });

  it('keeps the merged data free of prototypes and comparable to plain objects', () => {
    const p = expectedState(merged).profiles.get('c-2')!;
    expect(Object.getPrototypeOf(p.data)).toBeNull();
    expect(p.data).toEqual({ plan: 'enterprise', locale: 'ja-JP' });
  });

  it('flags one id sent with different bodies', () => {
    const a = profile('00000000-0000-4000-8000-0000000000ff', 'c-9', 1, { plan: 'free' });
    const b = profile('00000000-0000-4000-8000-0000000000ff', 'c-9', 1, { plan: 'pro' });
    expect(expectedState([a, b]).conflictingIds).toEqual(['00000000-0000-4000-8000-0000000000ff']);
  });
});

describe('expectedState: events and triggers', () => {
  const rules: TriggerRule[] = [
    { id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' },
    { id: 'pro-signup', when: { name: 'signup', data: { plan: 'pro' } }, emit: 'notify-sales' },
    { id: 'profile-rule', when: { type: 'profile' }, emit: 'never-for-events' },
  ];
  const values = [
    event('e-1', 'c-1', 'signup', { plan: 'pro' }),
    event('e-2', 'c-2', 'signup', { plan: 'free' }),
    event('e-3', 'c-1', 'logout'),
    event('e-1', 'c-1', 'signup', { plan: 'pro' }),
    profile('p-1', 'c-1', 1, { plan: 'pro' }),
  ];

  it('has one events document per unique id; an empty data stays {}', () => {
    const state = expectedState(values);
    expect(state.events.size).toBe(3);
    expect(toPlain(state.events.get('e-3'))).toEqual({
      clientId: 'c-1',
      name: 'logout',
      ts: '2026-01-02T03:04:05.000Z',
      data: {},
    });
    expect(state.events.has('p-1')).toBe(false);
  });

  it('emits one trigger per unique matching event and rule', () => {
    const state = expectedState(values, { rules });
    expect([...state.triggers.keys()].sort()).toEqual(['e-1:pro-signup', 'e-1:welcome', 'e-2:welcome']);
    expect(state.triggers.get('e-2:welcome')).toEqual({
      id: 'e-2:welcome',
      rule: 'welcome',
      trigger: 'send-welcome-email',
      clientId: 'c-2',
      sourceId: 'e-2',
      ts: '2026-01-02T03:04:05.000Z',
    });
    // Profiles only match when asked to.
    expect(expectedState(values, { rules, matchProfiles: true }).triggers.has('p-1:profile-rule')).toBe(true);
  });
});

describe('classifyValue: poison', () => {
  const good = {
    id: 'id-1',
    clientId: 'c-1',
    type: 'profile',
    version: 1,
    ts: '2026-01-01T00:00:00.000Z',
    data: { plan: 'pro' },
  };
  const goodEvent = {
    id: 'id-2',
    clientId: 'c-1',
    type: 'event',
    ts: '2026-01-01T00:00:00Z',
    name: 'login',
    data: {},
  };
  const without = (o: Record<string, unknown>, k: string) => {
    const { [k]: _, ...rest } = o;
    return rest;
  };
  const verdict = (v: Buffer | null, max?: number) => {
    const r = classifyValue(v, max);
    return r.ok ? 'ok' : r.errorClass;
  };

  it('accepts valid messages', () => {
    expect(verdict(buf(good))).toBe('ok');
    expect(verdict(buf(goodEvent))).toBe('ok');
    expect(verdict(buf({ ...goodEvent, data: { nested: [{ a: 1 }] } }))).toBe('ok');
    expect(verdict(buf({ ...good, version: 0, data: {} }))).toBe('ok');
    expect(verdict(buf({ ...good, extra: 'ignored' }))).toBe('ok');
  });

  it('rejects what is not JSON, or not a JSON object', () => {
    expect(verdict(null)).toBe('tombstone');
    expect(verdict(Buffer.alloc(0))).toBe('invalid-json');
    expect(verdict(Buffer.from('{"id":'))).toBe('invalid-json');
    expect(verdict(Buffer.from("{'id':'x'}"))).toBe('invalid-json');
    expect(verdict(Buffer.from([0xff, 0xfe, 0x7b, 0x7d]))).toBe('invalid-json');
    expect(verdict(Buffer.from('null'))).toBe('schema');
    expect(verdict(Buffer.from('[{"id":"x"}]'))).toBe('schema');
    expect(verdict(Buffer.from('"text"'))).toBe('schema');
    expect(verdict(Buffer.from('42'))).toBe('schema');
  });

  it('rejects a missing required field', () => {
    for (const k of ['id', 'clientId', 'type', 'ts', 'version', 'data']) {
      expect(verdict(buf(without(good, k))), k).toBe('schema');
    }
    for (const k of ['id', 'clientId', 'type', 'ts', 'name']) {
      expect(verdict(buf(without(goodEvent, k))), k).toBe('schema');
    }
  });

  it('rejects a field of the wrong type', () => {
    const bad: [Record<string, unknown>, string, unknown][] = [
      [good, 'id', 12],
      [good, 'id', ''],
      [good, 'clientId', null],
      [good, 'clientId', ''],
      [good, 'type', 'signal'],
      [good, 'ts', 'not-a-date'],
      [good, 'ts', 1767225600000],
      [good, 'version', '3'],
      [good, 'version', -1],
      [good, 'version', 1.5],
      [good, 'version', null],
      [good, 'data', [1, 2]],
      [good, 'data', null],
      [good, 'data', 'plan=pro'],
      [goodEvent, 'name', ''],
      [goodEvent, 'name', 7],
      [goodEvent, 'data', [1]],
      [goodEvent, 'data', null],
    ];
    for (const [base, k, v] of bad)
      expect(verdict(buf({ ...base, [k]: v })), `${k}=${JSON.stringify(v)}`).toBe('schema');
  });

  it('rejects a value over maxMessageBytes, and only over it', () => {
    const v = buf({ ...good, data: { blob: 'x'.repeat(500) } });
    expect(verdict(v, v.length)).toBe('ok');
    expect(verdict(v, v.length - 1)).toBe('too-large');
    expect(verdict(Buffer.alloc(1024 * 1024 + 1, 0x20))).toBe('too-large');
  });

  it('accepts __proto__, constructor and prototype anywhere inside data as ordinary fields, polluting nothing', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const texts = [
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      '{"prototype":1}',
      '{"a":{"b":{"__proto__":{"polluted":true}}}}',
      '{"items":[1,{"constructor":{}}]}',
    ];
    for (const data of texts) {
      const profileText = `{"id":"x","clientId":"c","type":"profile","version":1,"ts":"2026-01-01T00:00:00Z","data":${data}}`;
      const eventText = `{"id":"y","clientId":"c","type":"event","name":"n","ts":"2026-01-01T00:00:00Z","data":${data}}`;
      expect(verdict(Buffer.from(profileText)), data).toBe('ok');
      expect(verdict(Buffer.from(eventText)), data).toBe('ok');
    }
    const state = expectedState(
      texts.map((d, i) =>
        Buffer.from(
          `{"id":"z${i}","clientId":"c","type":"profile","version":${i + 1},"ts":"2026-01-01T00:00:00Z","data":${d}}`,
        ),
      ),
    );
    expect(state.poison).toHaveLength(0);
    const merged = state.profiles.get('c')!.data;
    expect(Object.keys(merged).sort()).toEqual(['__proto__', 'a', 'constructor', 'items', 'prototype']);
    expect(JSON.stringify(Object.getOwnPropertyDescriptor(merged, '__proto__')?.value)).toBe(
      '{"polluted":true}',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
  });
});

describe('expectedState on a generated workload', () => {
  const max = 4096;
  const plan = planWorkload({
    seed: 21,
    count: 6000,
    clients: 30,
    poisonShare: 0.03,
    duplicateShare: 0.05,
    shuffleVersions: 0.5,
    versionTieShare: 0.1,
    maxMessageBytes: max,
  });
  const kinds = countKinds(plan);

  it('finds exactly the generated poison, duplicates, events and versions', () => {
    const state = expectedState(plan, { maxMessageBytes: max });
    expect(state.poison).toHaveLength(kinds.poison);
    for (const p of state.poison) expect(plan[p.index]!.kind).toBe('poison');
    expect(state.accepted).toBe(kinds.profile + kinds.event + kinds.duplicate);
    expect(state.duplicates).toBe(kinds.duplicate);
    expect(state.conflictingIds).toEqual([]);
    expect(state.events.size).toBe(kinds.event);

    const maxVersion = new Map<string, number>();
    for (const r of plan) {
      if (r.kind === 'profile')
        maxVersion.set(r.clientId!, Math.max(maxVersion.get(r.clientId!) ?? 0, r.version!));
    }
    expect(new Map([...state.profiles].map(([k, v]) => [k, v.version]))).toEqual(maxVersion);
  });

  it('gives the same state for any arrival order', () => {
    const snapshot = (values: Iterable<Buffer | null>) => {
      const s = expectedState(values, { maxMessageBytes: max });
      // Plain objects: toEqual ignores key order (field insertion order follows arrival).
      return {
        profiles: Object.fromEntries([...s.profiles].map(([k, v]) => [k, toPlain(v)])),
        events: Object.fromEntries([...s.events].map(([k, v]) => [k, toPlain(v)])),
        poison: s.poison.length,
      };
    };
    const values = plan.map((r) => r.value);
    const reference = snapshot(values);
    expect(snapshot(shuffled(values, 1))).toEqual(reference);
    expect(snapshot([...values].reverse())).toEqual(reference);
  });
});

describe('expectedState: documents the mapping refuses (options.refused)', () => {
  it('makes them dead letters of class rejected, in no index, merging nothing and triggering nothing', () => {
    const rules: TriggerRule[] = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'w' }];
    const values = [
      profile('p-1', 'c-1', 1, { amount: 5, plan: 'free' }),
      profile('p-2', 'c-1', 2, { amount: 'five' }),
      profile('p-3', 'c-1', 3, { plan: 'pro' }),
      profile('p-4', 'c-2', 1, { amount: 'none' }),
      event('e-1', 'c-1', 'signup', { amount: 'free' }),
      event('e-2', 'c-1', 'signup', { amount: 1 }),
    ];
    const state = expectedState(values, {
      rules,
      refused: (m) => Object.hasOwn(m.data, 'amount') && typeof m.data.amount !== 'number',
    });
    expect(state.poison.map((q) => [q.index, q.errorClass])).toEqual([
      [1, 'rejected'],
      [3, 'rejected'],
      [4, 'rejected'],
    ]);
    expect(state.accepted).toBe(3);
    expect(Object.fromEntries([...state.profiles].map(([k, v]) => [k, toPlain(v)]))).toEqual({
      'c-1': { version: 3, data: { amount: 5, plan: 'pro' } },
    });
    expect([...state.events.keys()]).toEqual(['e-2']);
    expect([...state.triggers.keys()]).toEqual(['e-2:welcome']);
  });
});
