/**
 * Worker CPU by stage, from a `node --cpu-prof` profile: each sample is charged to the stage of
 * the innermost frame that belongs to one (a native `JSON.stringify` called by the bulk encoder
 * is the bulk encoder's; a Buffer copy inside kafkajs's decoder is the Kafka client's). Idle time
 * is left out: what remains is the CPU the worker used.
 */
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface StageTime {
  readonly stage: string;
  readonly ms: number;
  readonly share: number;
}

/** Which stage a frame belongs to, by its script; undefined: look further out. */
const RULES: readonly [RegExp, string][] = [
  [/\/kafkajs\//, 'Kafka client (kafkajs: fetch, decode, produce, transactions)'],
  [/\/ioredis\/|\/(src|dist)\/sinks\/redis/, 'Redis marks (ioredis, dedup and owners)'],
  [
    /\/@elastic\/|\/undici\/|\/(src|dist)\/(sinks\/(elasticsearch|recent-profiles)|clients\/elasticsearch)/,
    'Elasticsearch requests (bulk and mget encoding, HTTP, answers)',
  ],
  [/\/(src|dist)\/(model\/parse|operators\/parse-records)/, 'parse and validate'],
  [/\/(src|dist)\/model\/profile-merge/, 'profile merge'],
  [/\/(src|dist)\/operators\/(swept-seen-set|drop-repeats-within)/, 'time-windowed distinct'],
  [
    /\/(src|dist)\/(operators\/commit-in-order|model\/offset-tracker|sinks\/kafka)/,
    'offset tracking and commits',
  ],
  [/\/(src|dist)\/(operators|graph|model)\//, 'other graph stages'],
  [/\/rxjs\//, 'RxJS plumbing (subscribers, groupBy, merge)'],
  [/\/pino|\/thread-stream\/|\/sonic-boom\/|\/(src|dist)\/log\//, 'logging'],
  [/\/prom-client\/|\/(src|dist)\/(metrics|http)\//, 'metrics and HTTP endpoints'],
  [/\/(src|dist)\/(worker|control|clients|config|cli)\//, 'worker (intake, pause/resume, push-back)'],
  [/\/bench\/lib\//, 'benchmark memory probe'],
];

/** A Map, not an object literal: a frame named `constructor` must not find Object's. */
const SPECIAL = new Map<string, string>([
  ['(garbage collector)', 'garbage collection'],
  ['(program)', 'V8 and libuv, unattributed ((program))'],
]);

export function stagesOfProfile(
  profile: CpuProfile,
  window: { fromMs: number; toMs: number } = { fromMs: 0, toMs: Number.POSITIVE_INFINITY },
): StageTime[] {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stageOfNode = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    const known = stageOfNode.get(id);
    if (known !== undefined) return known;
    const { functionName, url } = byId.get(id)!.callFrame;
    let stage: string | null = null;
    if (functionName === '(idle)') stage = null;
    else if (SPECIAL.has(functionName)) stage = SPECIAL.get(functionName)!;
    else {
      const rule = url ? RULES.find(([re]) => re.test(url)) : undefined;
      if (rule) stage = rule[1];
      else {
        const up = parent.get(id);
        stage = up === undefined ? 'node internals and native code' : classify(up);
        if (stage === null && functionName !== '(idle)') stage = 'node internals and native code';
      }
    }
    stageOfNode.set(id, stage);
    return stage;
  };
  const us = new Map<string, number>();
  let at = 0;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at / 1000 < window.fromMs || at / 1000 > window.toMs) continue;
    const dt = Math.max(0, profile.timeDeltas[i + 1] ?? 0);
    const stage = classify(profile.samples[i]!);
    if (stage === null) continue;
    us.set(stage, (us.get(stage) ?? 0) + dt);
    total += dt;
  }
  return [...us.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([stage, t]) => ({ stage, ms: t / 1000, share: total > 0 ? t / total : 0 }));
}

export async function stagesOfProfileFile(
  file: string,
  window?: { fromMs: number; toMs: number },
): Promise<StageTime[]> {
  return stagesOfProfile(JSON.parse(await readFile(file, 'utf8')) as CpuProfile, window);
}
