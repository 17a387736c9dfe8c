import { readFile } from 'node:fs/promises';
import {
  type AllocationNode,
  type AllocationSummary,
  summarizeAllocations,
} from '../../harness/v8-profiles.js';
import type { Table } from './report.js';
import { fmt } from './stats.js';

export async function summarizeAllocationFile(file: string, top?: number): Promise<AllocationSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as { head: AllocationNode };
  return summarizeAllocations(profile.head, top);
}

/** One drain's allocation summary, with the documents it did and its rate (the profiler running). */
export interface AllocationRun {
  readonly summary: AllocationSummary;
  readonly docs: number;
  readonly rate: number;
}

export function allocationTables({ summary, docs }: AllocationRun): Table[] {
  const perDoc = (bytes: number) => fmt(bytes / docs, 0);
  const share = (bytes: number) => fmt((bytes * 100) / summary.totalBytes, 1);
  return [
    {
      title: 'Worker allocations by owner (not pinned, events only, sampled)',
      head: ['owner', 'bytes per document', 'share (%)'],
      rows: summary.byOwner.map((r) => [r.what, perDoc(r.bytes), share(r.bytes)]),
    },
    {
      title: 'Worker allocations by function (the largest)',
      head: ['function', 'bytes per document', 'share (%)'],
      rows: summary.bySite.map((r) => [r.what, perDoc(r.bytes), share(r.bytes)]),
    },
  ];
}
