import { lastValueFrom, type Observable, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../../src/model/message.js';
import type { BatchEntry } from '../../../src/model/outcome.js';
import { parseRecord } from '../../../src/model/parse.js';
import type { MergedUpdate } from '../../../src/model/profile-merge.js';
import { claimProcessed } from '../../../src/operators/claim-processed.js';
import { skipProcessed } from '../../../src/operators/skip-processed.js';
import { writeDocuments } from '../../../src/operators/write-documents.js';
import type { ProfileWrite } from '../../../src/sinks/ports.js';
import { InMemoryDocumentStore, InMemoryProcessedStore } from '../../support/in-memory-ports.js';
import { recordFactory } from '../../support/records.js';

const entries = (...records: ReturnType<ReturnType<typeof recordFactory>['event']>[]): BatchEntry[] =>
  records.map((r) => {
    const p = parseRecord(r, 1 << 20);
    if (!p.ok) throw new Error(p.reason);
    return { envelope: p.envelope as Envelope };
  });

const run = (batch: BatchEntry[], op: (s: Observable<BatchEntry[]>) => Observable<BatchEntry[]>) =>
  lastValueFrom(of(batch).pipe(op, toArray())).then((x) => x[0]!);

/** Like the real store when Elasticsearch refuses a document: any update setting `bad` is rejected. */
class RejectingStore extends InMemoryDocumentStore {
  calls: number[] = [];
  override mergeProfiles(updates: readonly MergedUpdate[]) {
    this.calls.push(updates.length);
    const ok = updates.filter((u) => !u.fields.has('bad'));
    const applied = new Map<MergedUpdate, ProfileWrite>();
    super.mergeProfiles(ok).subscribe((rs) => {
      for (const [i, u] of ok.entries()) applied.set(u, rs[i]!);
    });
    return of(
      updates.map(
        (u): ProfileWrite =>
          applied.get(u) ?? { status: 'rejected', reason: 'Elasticsearch 400 document_parsing_exception' },
      ),
    );
  }
}

describe('writeDocuments', () => {
  it('isolates a rejected profile update: the same client’s other updates of the batch are still applied', async () => {
    const r = recordFactory();
    const store = new RejectingStore();
    const out = await run(
      entries(
        r.profile('p1', 'c', 1, { plan: 'pro' }),
        r.profile('p2', 'c', 2, { bad: 1 }),
        r.profile('p3', 'c', 3, { email: 'e' }),
      ),
      writeDocuments(store),
    );
    expect(out.map((e) => e.outcome?.kind)).toEqual(['indexed', 'dead-letter', 'indexed']);
    expect(store.calls).toEqual([1, 3]); // the merged update once, then one per message
    expect(store.profiles.get('c')?.data).toEqual({ plan: 'pro', email: 'e' });
  });

  it('marks an event whose id exists as existed, leaving the decision to the claim', async () => {
    const r = recordFactory();
    const store = new InMemoryDocumentStore();
    await run(entries(r.event('e1', 'c')), writeDocuments(store));
    const again = await run(entries(r.event('e1', 'c')), writeDocuments(store));
    expect(again[0]).toMatchObject({ existed: true });
    expect(again[0]!.outcome).toBeUndefined();
  });
});

describe('skipProcessed and claimProcessed', () => {
  const retry = { baseMs: 1, maxMs: 2 };

  it('tells a replay of the same record from a re-sent copy at another offset', async () => {
    const processed = new InMemoryProcessedStore();
    const documents = new InMemoryDocumentStore();
    const first = recordFactory('t', 0);
    const original = first.event('e1', 'c', 'signup');
    // First attempt: written and claimed, then a crash before the commit.
    const a = await run(entries(original), (s) =>
      s.pipe(skipProcessed(processed), writeDocuments(documents), claimProcessed(processed, retry)),
    );
    expect(a[0]!.outcome).toEqual({ kind: 'indexed' });

    // The replay (same topic/partition/offset) is still this record's: indexed, so it triggers.
    const replay = await run(entries(original), (s) =>
      s.pipe(skipProcessed(processed), writeDocuments(documents), claimProcessed(processed, retry)),
    );
    expect(replay[0]!.outcome).toEqual({ kind: 'indexed' });

    // A copy at another offset is a duplicate, found by the lookup before any write.
    first.skip(5);
    const copy = await run(entries(first.event('e1', 'c', 'signup')), skipProcessed(processed));
    expect(copy[0]!.outcome).toEqual({ kind: 'duplicate', by: 't/0/0' });
  });

  it('gives an id whose write succeeded before its mark to the first record that claims it', async () => {
    const processed = new InMemoryProcessedStore();
    const documents = new InMemoryDocumentStore();
    const r = recordFactory('t', 0);
    const original = r.event('e1', 'c');
    const copy = r.event('e1', 'c');
    // The original was written, but the worker died before marking it: no mark, and a 409.
    await run(entries(original), writeDocuments(documents));
    const out = await run(entries(copy, original), (s) =>
      s.pipe(skipProcessed(processed), writeDocuments(documents), claimProcessed(processed, retry)),
    );
    // Both existed; the claim decides: the first in the batch owns the id, the other is a duplicate.
    expect(out.map((e) => e.outcome?.kind)).toEqual(['indexed', 'duplicate']);
  });
});
