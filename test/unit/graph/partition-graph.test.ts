import { map, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { ingestPartition } from '../../../src/graph/partition-graph.js';
import type { IngestMessage } from '../../../src/model/message.js';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import type { RecordDone } from '../../../src/model/outcome.js';
import type { OutRecord } from '../../../src/sinks/ports.js';
import {
  InMemoryCommitSink,
  InMemoryDocumentStore,
  InMemoryProcessedStore,
} from '../../support/in-memory-ports.js';
import { recordFactory, testSettings } from '../../support/records.js';

const scheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));
const rules = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' }];
const topics = { triggers: 'ingest.triggers', dlq: 'ingest.dlq' };

function harness() {
  const processed = new InMemoryProcessedStore();
  const documents = new InMemoryDocumentStore();
  const commits = new InMemoryCommitSink();
  const tracker = new OffsetTracker<OutRecord>();
  const done: { at: number; d: RecordDone }[] = [];
  const enrichStarts: { at: number; clientId: string; id: string }[] = [];
  return { processed, documents, commits, tracker, done, enrichStarts };
}

describe('ingestPartition (whole graph, in-memory sinks, virtual time)', () => {
  it('keeps per-client order through a slow enrich and never commits past unfinished work', () => {
    const h = harness();
    const r = recordFactory();
    // Client a's enrich takes 30 ms, client b's 5 ms: b overtakes a, but each client stays in order.
    const recs = {
      a: r.event('e1', 'a'),
      b: r.event('e2', 'b'),
      c: r.event('e3', 'a'),
      d: r.event('e4', 'b'),
      e: r.event('e5', 'a', 'signup'),
    };
    scheduler().run(({ cold, expectObservable, flush }) => {
      const source = cold('a b c d e 500ms |', recs);
      const commits$ = ingestPartition(
        source,
        {
          ...h,
          enrich: (m: IngestMessage) => {
            h.enrichStarts.push({ at: Date.now(), clientId: m.clientId, id: m.id });
            return timer(m.clientId === 'a' ? 30 : 5).pipe(map(() => m));
          },
        },
        {
          settings: testSettings({ batchMax: 2, batchMs: 50, commitIntervalMs: 20 }),
          rules,
          topics,
          tracker: h.tracker,
          onDone: (d) => h.done.push({ at: Date.now(), d }),
        },
      );
      // Records arrive at 0..4 ms. Enrich: b's e2 1→6, e4 6→11; a's e1 0→30, e3 30→60, e5 60→90.
      // Batches (2 or 50 ms): [e2 e4] at 11 (offsets 1, 3: blocked by offset 0), [e1 e3] at 60
      // (offsets 0..3 done), [e5] at 90 + 50 = 140. Commits follow 20 ms after the committable
      // offset moves: '4' at 80, '5' at 160; completion waits for the source (505).
      expectObservable(commits$.pipe(map((c) => c.offset))).toBe('80ms a 79ms b 344ms |', { a: '4', b: '5' });
      flush();
    });

    // Per-client order: each client's enrich started in offset order.
    for (const client of ['a', 'b']) {
      const ids = h.enrichStarts.filter((s) => s.clientId === client).map((s) => s.id);
      expect(ids).toEqual(client === 'a' ? ['e1', 'e3', 'e5'] : ['e2', 'e4']);
    }
    // b overtook a: b's second event started before a's second one.
    const startOf = (id: string) => h.enrichStarts.find((s) => s.id === id)!.at;
    expect(startOf('e4')).toBeLessThan(startOf('e3'));

    // Commit order: each commit covers only offsets that were done by then.
    for (const c of h.commits.commits) {
      const covered = h.done.filter((x) => BigInt(x.d.offset) < BigInt(c.offset));
      expect(covered).toHaveLength(Number(c.offset));
    }
    expect(h.commits.lastOffset).toBe('5');
    expect([...h.documents.events.keys()].sort()).toEqual(['e1', 'e2', 'e3', 'e4', 'e5']);
    // The signup event triggered exactly once, in the commit that passed its offset.
    const triggers = h.commits.records.filter((x) => x.topic === topics.triggers);
    expect(triggers).toHaveLength(1);
    expect(JSON.parse(String(triggers[0]!.value))).toEqual({
      id: 'e5:welcome',
      rule: 'welcome',
      trigger: 'send-welcome-email',
      clientId: 'a',
      sourceId: 'e5',
      ts: '2026-11-30T12:00:00.000Z',
    });
  });

  it('dead-letters poison, drops re-sent ids, merges profiles, and commits everything', () => {
    const h = harness();
    const r = recordFactory();
    const recs = [
      r.profile('p1', 'c', 2, { plan: 'pro', email: 'new@x' }),
      r.raw('{not json', 'c'),
      r.profile('p0', 'c', 1, { plan: 'free', locale: 'fr' }), // older: loses plan and email, wins locale
      r.event('e1', 'c', 'signup'),
      r.event('e1', 'c', 'signup'), // re-sent copy within the window
      r.raw(JSON.stringify({ id: 'x', clientId: 'c', type: 'event', ts: 'yesterday', name: 'n' })),
    ];
    scheduler().run(({ cold, flush }) => {
      const source = cold('abcdef 1s |', Object.fromEntries(recs.map((x, i) => ['abcdef'[i]!, x])));
      ingestPartition(
        source,
        { ...h, enrich: (m: IngestMessage) => [m] },
        {
          settings: testSettings(),
          rules,
          topics,
          tracker: h.tracker,
          onDone: (d) => h.done.push({ at: 0, d }),
        },
      ).subscribe();
      flush();
    });
    expect(h.done.map((x) => [x.d.offset, x.d.kind]).sort()).toEqual([
      ['0', 'indexed'],
      ['1', 'dead-letter'],
      ['2', 'indexed'],
      ['3', 'indexed'],
      ['4', 'duplicate'],
      ['5', 'dead-letter'],
    ]);
    expect(h.documents.profiles.get('c')).toMatchObject({
      version: 2,
      data: { plan: 'pro', email: 'new@x', locale: 'fr' },
    });
    const dlq = h.commits.records.filter((x) => x.topic === topics.dlq);
    expect(dlq.map((x) => x.headers?.['x-error-class'])).toEqual(['invalid-json', 'schema']);
    expect(dlq[0]!.value).toEqual(Buffer.from('{not json'));
    expect(dlq[1]!.headers).toMatchObject({ 'x-source-offset': '5', 'x-source-partition': '0' });
    expect(h.commits.records.filter((x) => x.topic === topics.triggers)).toHaveLength(1);
    expect(h.commits.lastOffset).toBe('6');
  });
});
