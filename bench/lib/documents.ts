/** What each benchmark message becomes in Elasticsearch, for loaders that bypass the worker. */
import type { WorkloadRecord } from '../../src/generator/workload.js';
import type { IngestMessage, ProfileUpdate } from '../../src/model/message.js';
import { applyUpdate, mergeUpdates } from '../../src/model/profile-merge.js';

export interface Doc {
  readonly index: 'events' | 'profiles';
  readonly op: 'create' | 'index';
  readonly id: string;
  readonly source: object;
}

/** What each message becomes in Elasticsearch (the worker's documents; a profile without merging). */
export function documentOf(r: WorkloadRecord): Doc {
  const m = JSON.parse(r.value!.toString('utf8')) as IngestMessage;
  if (m.type === 'event') {
    return {
      index: 'events',
      op: 'create',
      id: m.id,
      source: { clientId: m.clientId, name: m.name, ts: m.ts, data: m.data },
    };
  }
  const { document } = applyUpdate(undefined, mergeUpdates([m as ProfileUpdate]));
  return { index: 'profiles', op: 'index', id: m.clientId, source: document };
}
