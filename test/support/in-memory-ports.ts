import { type Observable, of } from 'rxjs';
import { applyUpdate, type MergedUpdate, type ProfileDocument } from '../../src/model/profile-merge.js';
import type {
  CommitSink,
  DocumentStore,
  EventDocument,
  EventWrite,
  OutRecord,
  ProcessedStore,
  ProfileWrite,
} from '../../src/sinks/ports.js';

/**
 * In-memory versions of the ports, for marble tests and benchmarks. Each one
 * mirrors a behaviour that the real sink also shows against the real server
 * (see test/integration): create answers "exists" for a known id, a claim keeps
 * the first origin, profiles merge by the contract's rule.
 */
export class InMemoryProcessedStore implements ProcessedStore {
  readonly marks = new Map<string, string>();

  lookup(ids: readonly string[]): Observable<ReadonlyMap<string, string>> {
    const found = new Map<string, string>();
    for (const id of ids) {
      const origin = this.marks.get(id);
      if (origin !== undefined) found.set(id, origin);
    }
    return of(found);
  }

  claim(entries: readonly { id: string; origin: string }[]): Observable<string[]> {
    return of(
      entries.map(({ id, origin }) => {
        const owner = this.marks.get(id);
        if (owner !== undefined) return owner;
        this.marks.set(id, origin);
        return origin;
      }),
    );
  }
}

export class InMemoryDocumentStore implements DocumentStore {
  readonly events = new Map<string, EventDocument['source']>();
  readonly profiles = new Map<string, ProfileDocument>();

  createEvents(events: readonly EventDocument[]): Observable<EventWrite[]> {
    return of(
      events.map((e): EventWrite => {
        if (this.events.has(e.id)) return { status: 'exists' };
        this.events.set(e.id, e.source);
        return { status: 'created' };
      }),
    );
  }

  mergeProfiles(updates: readonly MergedUpdate[]): Observable<ProfileWrite[]> {
    return of(
      updates.map((u): ProfileWrite => {
        const { document, changed } = applyUpdate(this.profiles.get(u.clientId), u);
        if (!changed) return { status: 'stale' };
        this.profiles.set(u.clientId, document);
        return { status: 'applied' };
      }),
    );
  }
}

export class InMemoryCommitSink implements CommitSink {
  readonly commits: { offset: string; records: readonly OutRecord[] }[] = [];

  commit(offset: string, records: readonly OutRecord[]): Observable<true> {
    this.commits.push({ offset, records });
    return of(true);
  }

  get lastOffset(): string | undefined {
    return this.commits.at(-1)?.offset;
  }

  get records(): OutRecord[] {
    return this.commits.flatMap((c) => c.records);
  }
}
