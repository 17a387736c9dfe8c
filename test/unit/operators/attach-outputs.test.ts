import { map, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { TriggerRule } from '../../../src/config/config.js';
import type { Outcome } from '../../../src/model/outcome.js';
import { type Done, decide, type Entry } from '../../../src/model/outcome.js';
import { type AttachOutputsOptions, attachOutputs } from '../../../src/operators/attach-outputs.js';
import { deleteEntry, openEntry, recordFactory, TS } from '../../support/data/records.js';

const testScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

const topics = { triggers: 'ingest.triggers', dlq: 'ingest.dlq' };
const rules: TriggerRule[] = [
  { id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' },
  { id: 'any-signup', when: { name: 'signup' }, emit: 'count-signup' },
  { id: 'vip', when: { clientId: 'vip' }, emit: 'notify-sales' },
];

function attach(batch: Entry[], options: Partial<AttachOutputsOptions> = {}): Done[] {
  let out: Done[] = [];
  of(batch)
    .pipe(attachOutputs({ rules, topics, ...options }))
    .subscribe((x) => {
      out = x;
    });
  return out;
}

/** What a Done publishes, as `<topic>:<trigger rule or error class>`. */
const published = (d: Done) =>
  d.payloads.map((p) =>
    p.topic === topics.triggers
      ? `trigger:${JSON.parse(String(p.value)).rule}`
      : `dlq:${p.headers?.['x-error-class']}`,
  );

describe('attachOutputs', () => {
  it('behaves as its marble diagram: triggers of an owned event, the dead letter of a dead record, nothing else', () => {
    const r = recordFactory();
    const e1 = decide(openEntry(r.event('e1', 'c', 'signup')), { kind: 'indexed' });
    const e2 = decide(openEntry(r.event('e2', 'c', 'signup')), { kind: 'duplicate', by: 't/0/9' });
    const p1 = decide(openEntry(r.profile('p1', 'c', 1, { plan: 'pro' })), { kind: 'indexed' });
    const x = decide(
      { record: r.raw('{not json', 'c'), seq: 3 },
      { kind: 'dead-letter', errorClass: 'invalid-json', reason: 'bad' },
    );
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(
        cold('--b--|', { b: [e1, e2, p1, x] }).pipe(
          attachOutputs({ rules, topics }),
          map((ds) => ds.map(published)),
        ),
      ).toBe('--o--|', { o: [['trigger:welcome', 'trigger:any-signup'], [], [], ['dlq:invalid-json']] });
    });
  });

  it('keeps each entry and its seq on the Done, in batch order', () => {
    const r = recordFactory();
    const a = decide(openEntry(r.event('a', 'c')), { kind: 'indexed' });
    const b = decide(openEntry(r.event('b', 'c')), { kind: 'stale' });
    const out = attach([b, a]);
    expect(out.map((d) => [d.seq, d.entry])).toEqual([
      [1, b],
      [0, a],
    ]);
  });

  it('builds the contract’s trigger record: key clientId, id "<sourceId>:<ruleId>"', () => {
    const r = recordFactory();
    const e = decide(openEntry(r.event('e-7', 'c-1', 'signup')), { kind: 'indexed' });
    const [trigger] = attach([e], { rules: [rules[0]!] })[0]!.payloads;
    expect(trigger).toMatchObject({ topic: 'ingest.triggers', key: 'c-1' });
    expect(JSON.parse(String(trigger!.value))).toEqual({
      id: 'e-7:welcome',
      rule: 'welcome',
      trigger: 'send-welcome-email',
      clientId: 'c-1',
      sourceId: 'e-7',
      ts: TS,
    });
  });

  it('builds the contract’s dead letter: the original key and value bytes, why, and where it came from', () => {
    const r = recordFactory('ingest.events', 4);
    r.at(17);
    const value = Buffer.from([0x7b, 0xff, 0x00]);
    const x = decide(
      { record: r.raw(value, 'c-9'), seq: 0 },
      { kind: 'dead-letter', errorClass: 'invalid-json', reason: 'bad bytes' },
    );
    const [dlq] = attach([x])[0]!.payloads;
    expect(dlq).toEqual({
      topic: 'ingest.dlq',
      key: Buffer.from('c-9'),
      value,
      headers: {
        'x-error-class': 'invalid-json',
        'x-error-message': 'bad bytes',
        'x-source-topic': 'ingest.events',
        'x-source-partition': '4',
        'x-source-offset': '17',
      },
    });
  });

  it('dead-letters a tombstone with its null value', () => {
    const r = recordFactory();
    const t = decide(
      { record: r.tombstone('c'), seq: 0 },
      { kind: 'dead-letter', errorClass: 'tombstone', reason: 'null' },
    );
    const [dlq] = attach([t])[0]!.payloads;
    expect(dlq).toMatchObject({
      key: Buffer.from('c'),
      value: null,
      headers: { 'x-error-class': 'tombstone' },
    });
  });

  it.each<[string, Outcome]>([
    ['a duplicate of another record', { kind: 'duplicate', by: 't/0/1' }],
    ['a window duplicate', { kind: 'duplicate', by: 'window' }],
    ['stale', { kind: 'stale' }],
    ['ignored', { kind: 'ignored' }],
    ['skipped', { kind: 'skipped' }],
  ])('publishes nothing for a matching event that is %s', (_, outcome) => {
    const e = decide(openEntry(recordFactory().event('e', 'vip', 'signup')), outcome);
    expect(attach([e])[0]!.payloads).toEqual([]);
  });

  it('publishes nothing for an indexed profile or a deleted profile, whatever the rules say', () => {
    const r = recordFactory();
    const profileRule: TriggerRule[] = [{ id: 'p', when: { type: 'profile' }, emit: 'x' }, ...rules];
    const p = decide(openEntry(r.profile('p', 'vip', 1, {})), { kind: 'indexed' });
    const d = decide(deleteEntry(r.tombstone('vip'), 'vip'), { kind: 'deleted' });
    expect(attach([p, d], { rules: profileRule }).map((x) => x.payloads)).toEqual([[], []]);
  });

  it('publishes nothing without rules, and only for matching rules', () => {
    const r = recordFactory();
    const login = decide(openEntry(r.event('l', 'c', 'login')), { kind: 'indexed' });
    const vipLogin = decide(openEntry(r.event('v', 'vip', 'login')), { kind: 'indexed' });
    expect(attach([login, vipLogin], { rules: [] }).map(published)).toEqual([[], []]);
    expect(attach([login, vipLogin]).map(published)).toEqual([[], ['trigger:vip']]);
  });

  describe('replays of committed work (below replayedBelow) publish nothing', () => {
    const at = (offset: string) => {
      const r = recordFactory();
      r.at(offset);
      return r;
    };
    const triggered = (offset: string) =>
      decide(openEntry(at(offset).event('e', 'c', 'signup')), { kind: 'indexed' });
    const dead = (offset: string) =>
      decide(
        { record: at(offset).raw('junk'), seq: 0 },
        { kind: 'dead-letter', errorClass: 'invalid-json', reason: 'r' },
      );

    it.each([
      ['9', '10', false],
      ['10', '10', true],
      ['11', '10', true],
      ['99', '100', false],
      ['100', '99', true],
      ['9007199254740992', '9007199254740993', false],
      ['9007199254740993', '9007199254740993', true],
    ])('offset %s with replayedBelow %s publishes: %s', (offset, below, publishes) => {
      const out = attach([triggered(offset), dead(offset)], { replayedBelow: below });
      expect(out.map((d) => d.payloads.length > 0)).toEqual([publishes, publishes]);
    });

    it('still passes such records on, decided, so their offsets are committed', () => {
      const e = triggered('3');
      const out = attach([e], { replayedBelow: '10' });
      expect(out).toEqual([{ seq: 3, payloads: [], entry: e }]);
    });
  });

  it('errors, naming the record, when an entry reaches it undecided', () => {
    const r = recordFactory('ingest.events', 2);
    r.at(5);
    const open = openEntry(r.event('e', 'c'));
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('x|', { x: [open] }).pipe(attachOutputs({ rules, topics }))).toBe(
        '#',
        undefined,
        expect.objectContaining({ message: 'ingest.events[2] offset 5: reached the commit undecided' }),
      );
    });
  });
});
