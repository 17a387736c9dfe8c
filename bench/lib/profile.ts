import { readFile, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { findSourceMap } from 'node:module';
import { packageOf, shortUrl } from '../../harness/v8-profiles.js';

/** The parts of a V8 .cpuprofile (the format of `node --cpu-prof` and the inspector) read here. */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface SelfTime {
  readonly name: string;
  readonly where: string;
  readonly ms: number;
  readonly share: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  /** Self time per function, largest first. */
  readonly functions: SelfTime[];
  /** Self time per origin: rxjs, a src/ file, node internals, GC, idle… largest first. */
  readonly origins: SelfTime[];
}

function origin(url: string, name: string): string {
  // V8's own entries are named in parentheses: (garbage collector), (idle), (program), (root).
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const pkg = packageOf(url);
  if (pkg !== undefined) return pkg;
  if (url.startsWith('node:')) return 'node internals';
  const src = url.search(/\/(src|bench|dist)\//);
  if (src >= 0) return url.slice(src + 1).replace(/\.(ts|js)$/, '');
  return url;
}

/** The TypeScript line of a position in code that tsx compiled (this process only), else the line itself. */
function originalLine(url: string, line: number, column: number): number {
  if (!url.startsWith('file://') || url.includes('node_modules')) return line;
  try {
    const entry = findSourceMap(url)?.findEntry(line, column) as { originalLine?: number } | undefined;
    return entry?.originalLine ?? line;
  } catch {
    return line;
  }
}

/**
 * Self time per function and per origin, from the samples (time deltas, not hit counts).
 * `window` keeps only the samples taken between `fromMs` and `toMs` after the profile started
 * (for a whole-process profile: the part of the run that matters, without start-up and shutdown).
 */
export function summarizeProfile(
  profile: CpuProfile,
  top = 12,
  window: { fromMs: number; toMs: number } = { fromMs: 0, toMs: Number.POSITIVE_INFINITY },
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    at += profile.timeDeltas[i] ?? 0;
    if (at / 1000 < window.fromMs || at / 1000 > window.toMs) continue;
    // Each delta is the time *before* the sample; attribute the next delta to this sample.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, dt));
  }
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const origins = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber, columnNumber } = byId.get(id)!.callFrame;
    const name = functionName || '(anonymous)';
    const where = url ? `${shortUrl(url)}:${originalLine(url, lineNumber, columnNumber) + 1}` : '';
    const key = `${name}@${where}`;
    const f = fns.get(key) ?? { name, where, us: 0 };
    f.us += us;
    fns.set(key, f);
    const o = origin(url, functionName);
    origins.set(o, (origins.get(o) ?? 0) + us);
    total += us;
  }
  const share = (us: number) => (total > 0 ? us / total : 0);
  return {
    totalMs: total / 1000,
    functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, ms: f.us / 1000, share: share(f.us) })),
    origins: [...origins.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([o, us]) => ({ name: o, where: '', ms: us / 1000, share: share(us) })),
  };
}

/** Profiles `fn` in this process with the inspector (the same format as `node --cpu-prof`). */
export async function profileInProcess(
  file: string,
  fn: () => Promise<void>,
  intervalUs = 200,
): Promise<ProfileSummary> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await session.post('Profiler.start');
    let failure: { err: unknown } | undefined;
    try {
      await fn();
    } catch (err) {
      failure = { err };
    }
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    await writeFile(file, JSON.stringify(profile));
    if (failure) throw failure.err;
    return summarizeProfile(profile);
  } finally {
    session.disconnect();
  }
}

export async function summarizeProfileFile(
  file: string,
  window?: { fromMs: number; toMs: number },
): Promise<ProfileSummary> {
  return summarizeProfile(JSON.parse(await readFile(file, 'utf8')) as CpuProfile, 12, window);
}
