import { readFile } from 'node:fs/promises';
import { packageOf, shortUrl } from './profile.js';
import type { Table } from './report.js';
import { fmt } from './stats.js';

/** The parts of a V8 sampling heap profile (HeapProfiler.getSamplingProfile) read here. */
export interface AllocationNode {
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly AllocationNode[];
}

export interface AllocationRow {
  readonly what: string;
  readonly bytes: number;
}

export interface AllocationSummary {
  readonly totalBytes: number;
  /** By owner: a package under node_modules, a directory of ours, node itself. */
  readonly byOwner: AllocationRow[];
  /** By allocating function (name, file, line). */
  readonly bySite: AllocationRow[];
}

/** The probe's own allocations (the inspector answering it, the file it writes) are left out. */
const PROBE_OWN = /^node:inspector|allocation-probe\.mjs$/;

function ownerOf(url: string): string {
  const pkg = packageOf(url);
  if (pkg !== undefined) return pkg;
  if (url.startsWith('node:')) return 'node';
  if (url === '') return '(V8 builtins: join, push, …)';
  const src = /\/(?:dist|src)\/([^/]+)\//.exec(url);
  return src ? `rxingest ${src[1]}` : url.replace(/^.*\//, '');
}

function siteOf(node: AllocationNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${url ? `${shortUrl(url)}:${lineNumber + 1}` : '(builtin)'}`;
}

/** Where the sampled bytes were allocated, by owner and by function, largest first. */
export function summarizeAllocations(head: AllocationNode, top = 15): AllocationSummary {
  const owners = new Map<string, number>();
  const sites = new Map<string, number>();
  let totalBytes = 0;
  const walk = (node: AllocationNode, underProbe: boolean) => {
    const probe = underProbe || PROBE_OWN.test(node.callFrame.url);
    if (node.selfSize > 0 && !probe) {
      totalBytes += node.selfSize;
      const owner = ownerOf(node.callFrame.url);
      owners.set(owner, (owners.get(owner) ?? 0) + node.selfSize);
      const site = siteOf(node);
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, probe);
  };
  walk(head, false);
  const rows = (m: Map<string, number>) =>
    [...m]
      .map(([what, bytes]) => ({ what, bytes }))
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, top);
  return { totalBytes, byOwner: rows(owners), bySite: rows(sites) };
}

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
