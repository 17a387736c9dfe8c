/**
 * Reading V8's profiles (`--cpu-prof`, the sampling heap profiler): who a script URL belongs to, and
 * where sampled bytes were allocated. The benchmarks summarize their runs with these.
 */

/** The npm package a script URL belongs to (a scoped one whole), or undefined outside node_modules. */
export function packageOf(url: string): string | undefined {
  const nm = url.lastIndexOf('node_modules/');
  if (nm < 0) return undefined;
  const rest = url.slice(nm + 'node_modules/'.length).split('/');
  return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
}

/** A script URL from its package or our tree down: `kafkajs/src/…`, `dist/sinks/…`. */
export const shortUrl = (url: string): string => {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const src = url.search(/\/(src|bench|dist)\//);
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, '');
};

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
