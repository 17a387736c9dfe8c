/**
 * A deterministic, seeded model of the traffic rxingest ingests: profile updates, events,
 * producer-retry duplicates and poison, each with the time (relative to the start of the run)
 * at which it should be sent.
 *
 * Same options (seed included) ⇒ byte-identical records. No clock and no Math.random are read:
 * message timestamps are `baseTimeMs + sendAtMs`.
 */

export type RecordKind = 'profile' | 'event' | 'duplicate' | 'poison';

export type PoisonKind = 'invalid-json' | 'missing-field' | 'wrong-type' | 'oversize' | 'null-value';

export const POISON_KINDS: readonly PoisonKind[] = [
  'invalid-json',
  'missing-field',
  'wrong-type',
  'oversize',
  'null-value',
];

/**
 * Field names that reach an object prototype if code assigns them: the contract makes them
 * ordinary data, so the generator puts them into valid messages (`hostileKeyShare`).
 */
export const HOSTILE_KEY_VARIANTS = [
  'data.__proto__',
  'data.constructor',
  'data.prototype',
  'data.meta.__proto__',
  'data.items[1].constructor',
] as const;

export const RECORD_KINDS: readonly RecordKind[] = ['profile', 'event', 'duplicate', 'poison'];

/** The small profile field vocabulary: random subsets of it overlap, so merges have work to do. */
export const PROFILE_FIELDS = ['plan', 'email', 'locale', 'tier', 'score'] as const;

export const DEFAULT_EVENT_NAMES: readonly string[] = ['signup', 'purchase', 'login', 'logout'];

export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

/** 2026-01-01T00:00:00.000Z: message `ts` values are this plus the planned send time. */
export const DEFAULT_BASE_TIME_MS = Date.UTC(2026, 0, 1);

export interface DelayRange {
  /** Inclusive, in ms. */
  readonly min: number;
  /** Inclusive, in ms. */
  readonly max: number;
}

export interface WorkloadOptions {
  /** PRNG seed (any integer; taken modulo 2^32). Default 1. */
  readonly seed?: number;
  /** Planned messages per second over the whole run (duplicates and poison included). Default 1000. */
  readonly ratePerSec?: number;
  /** Length of the run. Default 10 000 ms, or `count / ratePerSec` when `count` is given. */
  readonly durationMs?: number;
  /** Exact number of records (duplicates and poison included). Default `ratePerSec * durationMs / 1000`. */
  readonly count?: number;
  /** Number of clients, ids `c-0001`, `c-0002`, … Default 100. */
  readonly clients?: number;
  /** Share of original (non-duplicate, non-poison) messages that are profile updates; the rest are events. Default 0.3. */
  readonly profileShare?: number;
  /** Share of all records that re-send an earlier message (same id, same bytes), like a producer retry. Default 0.02. */
  readonly duplicateShare?: number;
  /** How long after its original a duplicate is sent. Default 10..5000 ms. */
  readonly duplicateDelayMs?: DelayRange;
  /** Share of all records that re-send an earlier message far later (a replay). Default 0. */
  readonly lateDuplicateShare?: number;
  /** Delay of the late duplicates; they may extend the run past `durationMs`. Default 30 000..120 000 ms. */
  readonly lateDuplicateDelayMs?: DelayRange;
  /** Share of all records that are poison. Default 0.01. */
  readonly poisonShare?: number;
  /**
   * Share of valid profiles and events whose `data` also carries a key such as `__proto__`,
   * `constructor` or `prototype` (top level or nested): ordinary data by the contract. Default 0.01.
   */
  readonly hostileKeyShare?: number;
  /** Which poison kinds to produce, in rotation. Default all of POISON_KINDS. */
  readonly poisonKinds?: readonly PoisonKind[];
  /** Oversize poison is a few bytes to 1 KiB over this. Default 1 MiB. */
  readonly maxMessageBytes?: number;
  /** A few hot clients (the first ids) that receive `hotShare` of all messages. Default off. */
  readonly skew?: { readonly hotClients: number; readonly hotShare: number };
  /** Event names to draw from. Default signup, purchase, login, logout. */
  readonly eventNames?: readonly string[];
  /**
   * Emit some clients' profile updates out of version order (within small blocks of 2–5
   * consecutive updates). `true` = half of the clients, a number = that share of the clients
   * (at least one client when > 0). Default false.
   */
  readonly shuffleVersions?: boolean | number;
  /** Share of profile updates that reuse the client's previous version (ties, broken by the greater id). Default 0. */
  readonly versionTieShare?: number;
  /** Epoch ms the message `ts` values count from. Default 2026-01-01T00:00:00.000Z. */
  readonly baseTimeMs?: number;
}

export interface WorkloadRecord {
  /** When to send it, in ms after the start of the run. */
  readonly sendAtMs: number;
  /** Kafka key: the clientId (null for some poison). */
  readonly key: string | null;
  /** Kafka value; null for the `null-value` poison (a tombstone). */
  readonly value: Buffer | null;
  readonly kind: RecordKind;
  /** The message id (profile, event and duplicate records). */
  readonly id?: string;
  /** The client the record is about (absent for poison without a key). */
  readonly clientId?: string;
  /** For profile updates (and their duplicates): the version sent. */
  readonly version?: number;
  /** For duplicates: what the original was, and how long after it this copy is sent. */
  readonly duplicateOf?: 'profile' | 'event';
  readonly delayMs?: number;
  readonly late?: boolean;
  readonly poisonKind?: PoisonKind;
  /** What exactly is wrong with the poison, e.g. `missing:version`, `truncated`. */
  readonly poisonDetail?: string;
}

/** The numbers a workload resolves to (before any random draw). */
export interface WorkloadShape {
  readonly total: number;
  readonly originals: number;
  readonly duplicates: number;
  readonly lateDuplicates: number;
  readonly poison: number;
  readonly durationMs: number;
  readonly ratePerSec: number;
  readonly clients: readonly string[];
  readonly hotClients: readonly string[];
  readonly shuffledClients: readonly string[];
}

// ---------------------------------------------------------------- PRNG

/** mulberry32: a tiny, fast 32-bit PRNG; good enough for workloads, not for secrets. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Next unsigned 32-bit integer. */
  u32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [min, max] (inclusive). */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(items.length)] as T;
  }

  /** Fisher–Yates, in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const a = items[i] as T;
      items[i] = items[j] as T;
      items[j] = a;
    }
    return items;
  }

  /** A version-4-shaped UUID (8-4-4-4-12 lowercase hex) drawn from this generator. */
  uuid(): string {
    const hex = [this.u32(), this.u32(), this.u32(), this.u32()]
      .map((n) => n.toString(16).padStart(8, '0'))
      .join('');
    const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
    return (
      `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-` +
      `${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
    );
  }
}

// ---------------------------------------------------------------- options

interface Resolved {
  readonly seed: number;
  readonly shape: WorkloadShape;
  readonly profileShare: number;
  readonly duplicateDelay: DelayRange;
  readonly lateDelay: DelayRange;
  readonly poisonKinds: readonly PoisonKind[];
  readonly hostileKeyShare: number;
  readonly maxMessageBytes: number;
  readonly hotShare: number;
  readonly eventNames: readonly string[];
  readonly shuffleShare: number;
  readonly versionTieShare: number;
  readonly baseTimeMs: number;
}

const fail = (name: string, value: unknown, expected: string): never => {
  throw new RangeError(`workload option ${name} is ${JSON.stringify(value)}: expected ${expected}`);
};

const share = (name: string, value: number | undefined, fallback: number): number => {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1) fail(name, v, 'a number from 0 to 1');
  return v;
};

const delay = (name: string, value: DelayRange | undefined, fallback: DelayRange): DelayRange => {
  const v = value ?? fallback;
  const ok =
    Number.isInteger(v.min) && Number.isInteger(v.max) && v.min >= 0 && v.max >= v.min && v.max <= 2 ** 31;
  if (!ok) fail(name, v, '{ min, max } whole milliseconds with 0 <= min <= max');
  return v;
};

const clientIds = (n: number): string[] => {
  const width = Math.max(4, String(n).length);
  return Array.from({ length: n }, (_, i) => `c-${String(i + 1).padStart(width, '0')}`);
};

function resolve(opts: WorkloadOptions): Resolved {
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed)) fail('seed', seed, 'an integer');
  const ratePerSec = opts.ratePerSec ?? 1000;
  if (!Number.isFinite(ratePerSec) || ratePerSec <= 0) fail('ratePerSec', ratePerSec, 'a number > 0');
  if (opts.count !== undefined && (!Number.isInteger(opts.count) || opts.count < 0)) {
    fail('count', opts.count, 'a whole number >= 0');
  }
  if (opts.durationMs !== undefined && (!Number.isFinite(opts.durationMs) || opts.durationMs <= 0)) {
    fail('durationMs', opts.durationMs, 'a number of ms > 0');
  }
  const durationMs =
    opts.durationMs ?? (opts.count !== undefined ? (opts.count * 1000) / ratePerSec : 10_000);
  const total = opts.count ?? Math.round((ratePerSec * durationMs) / 1000);

  const nClients = opts.clients ?? 100;
  if (!Number.isInteger(nClients) || nClients < 1) fail('clients', nClients, 'a whole number >= 1');
  const clients = clientIds(nClients);

  const profileShare = share('profileShare', opts.profileShare, 0.3);
  const duplicateShare = share('duplicateShare', opts.duplicateShare, 0.02);
  const lateShare = share('lateDuplicateShare', opts.lateDuplicateShare, 0);
  const poisonShare = share('poisonShare', opts.poisonShare, 0.01);
  if (duplicateShare + lateShare + poisonShare > 1 + 1e-9) {
    fail(
      'duplicateShare + lateDuplicateShare + poisonShare',
      duplicateShare + lateShare + poisonShare,
      '<= 1',
    );
  }
  const duplicates = Math.round(total * duplicateShare);
  const lateDuplicates = Math.round(total * lateShare);
  const poison = Math.min(Math.round(total * poisonShare), total - duplicates - lateDuplicates);
  const originals = total - duplicates - lateDuplicates - poison;
  if (originals <= 0 && duplicates + lateDuplicates > 0) {
    fail('duplicateShare', duplicateShare, 'to leave some original messages to duplicate');
  }

  const hostileKeyShare = share('hostileKeyShare', opts.hostileKeyShare, 0.01);
  const poisonKinds = opts.poisonKinds ?? POISON_KINDS;
  if (poisonKinds.length === 0 || poisonKinds.some((k) => !POISON_KINDS.includes(k))) {
    fail('poisonKinds', poisonKinds, `a non-empty list of ${POISON_KINDS.join(', ')}`);
  }
  const maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  if (!Number.isInteger(maxMessageBytes) || maxMessageBytes < 1024) {
    fail('maxMessageBytes', maxMessageBytes, 'a whole number of bytes >= 1024');
  }

  let hotClients: string[] = [];
  let hotShare = 0;
  if (opts.skew) {
    const { hotClients: h, hotShare: s } = opts.skew;
    if (!Number.isInteger(h) || h < 1 || h >= nClients) {
      fail('skew.hotClients', h, `a whole number from 1 to ${nClients - 1} (fewer than the clients)`);
    }
    hotShare = share('skew.hotShare', s, 0);
    hotClients = clients.slice(0, h);
  }

  const eventNames = opts.eventNames ?? DEFAULT_EVENT_NAMES;
  if (eventNames.length === 0 || eventNames.some((n) => typeof n !== 'string' || n.length === 0)) {
    fail('eventNames', eventNames, 'a non-empty list of non-empty names');
  }

  const sv = opts.shuffleVersions ?? false;
  const shuffleShare = sv === true ? 0.5 : sv === false ? 0 : share('shuffleVersions', sv, 0);
  const versionTieShare = share('versionTieShare', opts.versionTieShare, 0);
  if (versionTieShare >= 1) fail('versionTieShare', versionTieShare, 'a number from 0 to below 1');

  const baseTimeMs = opts.baseTimeMs ?? DEFAULT_BASE_TIME_MS;
  if (!Number.isFinite(baseTimeMs) || Number.isNaN(new Date(baseTimeMs).getTime())) {
    fail('baseTimeMs', baseTimeMs, 'epoch milliseconds');
  }

  // The shuffled clients are drawn from their own stream, so they do not move when the counts change.
  const pickRng = new Rng((seed ^ 0x5bd1e995) >>> 0);
  const nShuffled = shuffleShare > 0 ? Math.max(1, Math.round(nClients * shuffleShare)) : 0;
  const shuffledClients = pickRng
    .shuffle([...clients])
    .slice(0, nShuffled)
    .sort();

  return {
    seed: seed >>> 0,
    shape: {
      total,
      originals,
      duplicates,
      lateDuplicates,
      poison,
      durationMs,
      ratePerSec: durationMs > 0 ? (total * 1000) / durationMs : ratePerSec,
      clients,
      hotClients,
      shuffledClients,
    },
    profileShare,
    duplicateDelay: delay('duplicateDelayMs', opts.duplicateDelayMs, { min: 10, max: 5000 }),
    lateDelay: delay('lateDuplicateDelayMs', opts.lateDuplicateDelayMs, { min: 30_000, max: 120_000 }),
    poisonKinds,
    hostileKeyShare,
    maxMessageBytes,
    hotShare,
    eventNames,
    shuffleShare,
    versionTieShare,
    baseTimeMs,
  };
}

/** Validates the options and returns the counts and clients they resolve to; throws RangeError on a bad option. */
export function describeWorkload(opts: WorkloadOptions = {}): WorkloadShape {
  return resolve(opts).shape;
}

// ---------------------------------------------------------------- content

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

interface ClientState {
  /** The highest version handed out so far. */
  counter: number;
  /** The version of the previous update (for ties). */
  last: number;
  /** Shuffled clients: the rest of the current out-of-order block. */
  pending: number[];
}

const PLANS = ['free', 'pro', 'team', 'enterprise'];
const LOCALES = ['en-US', 'fr-FR', 'de-DE', 'ja-JP', 'pt-BR', 'es-ES'];

/** A min-heap of pending duplicates, by (sendAtMs, sequence): equal times keep insertion order. */
class DuplicateQueue {
  private readonly items: { at: number; seq: number; record: WorkloadRecord }[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  peekAt(): number {
    return this.items[0]?.at ?? Number.POSITIVE_INFINITY;
  }

  push(record: WorkloadRecord): void {
    const items = this.items;
    items.push({ at: record.sendAtMs, seq: this.seq++, record });
    let i = items.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  pop(): WorkloadRecord {
    const items = this.items;
    const top = items[0];
    if (!top) throw new RangeError('pop from an empty queue');
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.less(l, m)) m = l;
        if (r < items.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top.record;
  }

  private less(a: number, b: number): boolean {
    const x = this.items[a]!;
    const y = this.items[b]!;
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }

  private swap(a: number, b: number): void {
    const x = this.items[a]!;
    this.items[a] = this.items[b]!;
    this.items[b] = x;
  }
}

/** A null-prototype object, so `__proto__` and friends are plain own keys (for building hostile JSON). */
const bare = (entries: [string, Json][]): { [k: string]: Json } => {
  const o: { [k: string]: Json } = Object.create(null);
  for (const [k, v] of entries) o[k] = v;
  return o;
};

const encode = (o: Json): Buffer => Buffer.from(JSON.stringify(o), 'utf8');

class WorkloadGenerator {
  private readonly rng: Rng;
  private readonly state = new Map<string, ClientState>();
  private readonly shuffled: ReadonlySet<string>;
  private readonly cold: readonly string[];
  private poisonCount = 0;

  constructor(private readonly r: Resolved) {
    this.rng = new Rng(r.seed);
    this.shuffled = new Set(r.shape.shuffledClients);
    const hot = new Set(r.shape.hotClients);
    this.cold = r.shape.clients.filter((c) => !hot.has(c));
  }

  *records(): Generator<WorkloadRecord> {
    const { rng, r } = this;
    const { total, originals, duplicates, lateDuplicates, poison, durationMs } = r.shape;
    const base = total - duplicates - lateDuplicates;
    const interval = base > 0 ? durationMs / base : 0;
    const lastSlotAt = (base - 1) * interval;
    const queue = new DuplicateQueue();

    // Selection sampling: exactly `poison` of the base slots are poison, exactly `duplicates`
    // (and `lateDuplicates`) copies are spread over the originals, all decided in one pass.
    let poisonLeft = poison;
    let originalsLeft = originals;
    const copies = (n: number) => ({
      each: originals > 0 ? Math.floor(n / originals) : 0,
      extra: originals > 0 ? n % originals : 0,
    });
    const dup = copies(duplicates);
    const late = copies(lateDuplicates);

    for (let i = 0; i < base; i++) {
      const at = i * interval;
      while (queue.size > 0 && queue.peekAt() < at) yield queue.pop();

      if (rng.int(base - i) < poisonLeft) {
        poisonLeft--;
        yield this.poison(at);
        continue;
      }
      const original = this.original(at);
      yield original;

      let n = dup.each;
      if (rng.int(originalsLeft) < dup.extra) {
        dup.extra--;
        n++;
      }
      let m = late.each;
      if (rng.int(originalsLeft) < late.extra) {
        late.extra--;
        m++;
      }
      originalsLeft--;
      for (let k = 0; k < n; k++) {
        const { min, max } = r.duplicateDelay;
        // Keep the copy inside the run: near its end, the shortest allowed delay.
        const room = Math.floor(lastSlotAt - at);
        const d = room >= min ? rng.between(min, Math.min(max, room)) : min;
        queue.push(this.copy(original, d, false));
      }
      for (let k = 0; k < m; k++) {
        queue.push(this.copy(original, rng.between(r.lateDelay.min, r.lateDelay.max), true));
      }
    }
    while (queue.size > 0) yield queue.pop();
  }

  private copy(original: WorkloadRecord, delayMs: number, late: boolean): WorkloadRecord {
    return {
      sendAtMs: original.sendAtMs + delayMs,
      key: original.key,
      value: original.value,
      kind: 'duplicate',
      id: original.id!,
      clientId: original.clientId!,
      ...(original.version !== undefined ? { version: original.version } : {}),
      duplicateOf: original.kind as 'profile' | 'event',
      delayMs,
      late,
    };
  }

  private client(): string {
    const { rng, r } = this;
    if (r.shape.hotClients.length > 0 && rng.chance(r.hotShare)) return rng.pick(r.shape.hotClients);
    return rng.pick(this.cold.length > 0 ? this.cold : r.shape.clients);
  }

  private ts(at: number): string {
    return new Date(Math.floor(this.r.baseTimeMs + at)).toISOString();
  }

  private clientState(clientId: string): ClientState {
    let s = this.state.get(clientId);
    if (!s) {
      s = { counter: 0, last: 0, pending: [] };
      this.state.set(clientId, s);
    }
    return s;
  }

  private nextVersionIn(s: ClientState): number {
    if (s.counter > 0 && this.r.versionTieShare > 0 && this.rng.chance(this.r.versionTieShare))
      return s.counter;
    s.counter += 1;
    return s.counter;
  }

  private version(clientId: string): number {
    const s = this.clientState(clientId);
    if (!this.shuffled.has(clientId)) {
      s.last = this.nextVersionIn(s);
      return s.last;
    }
    if (s.pending.length === 0) {
      // A block of 2–5 consecutive versions, sent in a shuffled (never the sorted) order.
      const block = Array.from({ length: this.rng.between(2, 5) }, () => this.nextVersionIn(s));
      this.rng.shuffle(block);
      if (block.every((v, i) => i === 0 || (block[i - 1] as number) <= v)) block.reverse();
      s.pending = block;
    }
    s.last = s.pending.shift()!;
    return s.last;
  }

  private profileData(clientId: string): { [k: string]: Json } {
    const { rng } = this;
    const data: { [k: string]: Json } = {};
    const fields = PROFILE_FIELDS.filter(() => rng.chance(0.5));
    if (fields.length === 0) fields.push(rng.pick(PROFILE_FIELDS));
    for (const f of fields) {
      switch (f) {
        case 'plan':
          data.plan = rng.pick(PLANS);
          break;
        case 'email':
          data.email = `${clientId}+${rng.int(1000)}@example.com`;
          break;
        case 'locale':
          data.locale = rng.pick(LOCALES);
          break;
        case 'tier':
          data.tier = rng.between(1, 5);
          break;
        case 'score':
          data.score = rng.int(10_000) / 10;
          break;
      }
    }
    return data;
  }

  private eventData(name: string): { [k: string]: Json } | undefined {
    const { rng } = this;
    switch (name) {
      case 'signup':
        return { plan: rng.pick(PLANS), referrer: rng.pick(['ads', 'organic', 'friend']) };
      case 'purchase':
        return {
          amount: rng.int(50_000) / 100,
          currency: rng.pick(['EUR', 'USD', 'JPY']),
          sku: `sku-${rng.int(500)}`,
        };
      case 'login':
        return { method: rng.pick(['password', 'sso', 'magic-link']) };
      case 'logout':
        // An empty payload is valid; a missing `data` is poison.
        return rng.chance(0.5) ? {} : { reason: rng.pick(['user', 'timeout']) };
      default:
        return { n: rng.int(1000) };
    }
  }

  private profileMessage(at: number, clientId: string, version: number): { [k: string]: Json } {
    return {
      id: this.rng.uuid(),
      clientId,
      type: 'profile',
      version,
      ts: this.ts(at),
      data: this.profileData(clientId),
    };
  }

  private eventMessage(at: number, clientId: string, name = this.rng.pick(this.r.eventNames)) {
    const data = this.eventData(name);
    const m: { [k: string]: Json } = { id: this.rng.uuid(), clientId, type: 'event', ts: this.ts(at), name };
    if (data !== undefined) m.data = data;
    return m;
  }

  private original(at: number): WorkloadRecord {
    const clientId = this.client();
    if (this.rng.chance(this.r.profileShare)) {
      const version = this.version(clientId);
      const m = this.withHostileKey(this.profileMessage(at, clientId, version));
      return {
        sendAtMs: at,
        key: clientId,
        value: encode(m),
        kind: 'profile',
        id: m.id as string,
        clientId,
        version,
      };
    }
    const m = this.withHostileKey(this.eventMessage(at, clientId));
    return { sendAtMs: at, key: clientId, value: encode(m), kind: 'event', id: m.id as string, clientId };
  }

  /** Now and then, a prototype-reaching key among the data: valid, stored and merged like any field. */
  private withHostileKey(m: { [k: string]: Json }): { [k: string]: Json } {
    if (m.data === undefined || !this.rng.chance(this.r.hostileKeyShare)) return m;
    const entries: [string, Json][] = Object.entries(m.data as { [k: string]: Json });
    switch (this.rng.pick(HOSTILE_KEY_VARIANTS)) {
      case 'data.__proto__':
        entries.push(['__proto__', { isAdmin: true }]);
        break;
      case 'data.constructor':
        entries.push(['constructor', { prototype: { isAdmin: true } }]);
        break;
      case 'data.prototype':
        entries.push(['prototype', { isAdmin: true }]);
        break;
      case 'data.meta.__proto__':
        entries.push(['meta', bare([['__proto__', { polluted: true }]])]);
        break;
      default:
        entries.push(['items', [{ sku: 'a' }, bare([['constructor', { prototype: { polluted: true } }]])]]);
    }
    m.data = bare(entries);
    return m;
  }

  private poison(at: number): WorkloadRecord {
    const { rng, r } = this;
    const kind = r.poisonKinds[this.poisonCount++ % r.poisonKinds.length] as PoisonKind;
    const clientId = this.client();
    const asProfile = rng.chance(0.5);
    // Poison gets fresh ids; its would-be version never advances the client's counter.
    const template = () =>
      asProfile
        ? this.profileMessage(at, clientId, this.clientState(clientId).counter + 1)
        : this.eventMessage(at, clientId);
    const out = (value: Buffer | null, detail: string, key: string | null = clientId): WorkloadRecord => ({
      sendAtMs: at,
      key,
      value,
      kind: 'poison',
      ...(key !== null ? { clientId: key } : {}),
      poisonKind: kind,
      poisonDetail: detail,
    });

    switch (kind) {
      case 'invalid-json': {
        const text = JSON.stringify(template());
        const key = rng.chance(0.2) ? null : clientId;
        switch (rng.int(6)) {
          case 0:
            return out(Buffer.from(text.slice(0, rng.between(1, text.length - 1))), 'truncated', key);
          case 1:
            return out(Buffer.from('this is not json'), 'not-json', key);
          case 2: {
            const bytes = [0xff, 0xfe];
            for (let n = rng.between(8, 32); n > 0; n--) bytes.push(rng.int(256));
            return out(Buffer.from(bytes), 'binary', key);
          }
          case 3:
            return out(Buffer.alloc(0), 'empty', key);
          case 4:
            return out(Buffer.from(`${text.slice(0, -1)},}`), 'trailing-comma', key);
          default:
            return out(Buffer.from(text.replaceAll('"', "'")), 'single-quotes', key);
        }
      }
      case 'missing-field': {
        const m = template();
        const required = asProfile
          ? ['id', 'clientId', 'type', 'ts', 'version', 'data']
          : ['id', 'clientId', 'type', 'ts', 'name'];
        const field = rng.pick(required);
        delete m[field];
        return out(encode(m), `missing:${field}`);
      }
      case 'wrong-type': {
        const m = template();
        const variants: [string, Json][] = [
          ['id', 12345],
          ['id', ''],
          ['clientId', 42],
          ['clientId', ''],
          ['type', 'signal'],
          ['type', 7],
          ['ts', 'not-a-date'],
          ['ts', 1767225600000],
          ['data', [1, 2, 3]],
          ['data', 'plan=pro'],
          ['$', null],
        ];
        if (asProfile) variants.push(['version', '3'], ['version', -1], ['version', 1.5], ['version', null]);
        else variants.push(['name', 7], ['name', '']);
        const [field, value] = rng.pick(variants);
        if (field === '$') {
          // Valid JSON, but not an object.
          const top: Json = rng.pick<Json>([[m], JSON.stringify(m), null, 42]);
          return out(
            encode(top),
            `not-an-object:${top === null ? 'null' : Array.isArray(top) ? 'array' : typeof top}`,
          );
        }
        m[field] = value;
        return out(encode(m), `${field}:${JSON.stringify(value)}`);
      }
      case 'oversize': {
        const m = this.eventMessage(at, clientId, 'purchase');
        const data = (m.data ?? {}) as { [k: string]: Json };
        data.blob = '';
        m.data = data;
        const target = r.maxMessageBytes + rng.between(1, 1024);
        data.blob = 'x'.repeat(target - encode(m).length);
        return out(encode(m), `bytes:${target}`);
      }
      case 'null-value':
        return out(null, 'tombstone');
    }
  }
}

/**
 * The workload as a lazy sequence of records in send order (sendAtMs ascending; a duplicate
 * never precedes its original). Memory stays proportional to the pending duplicates, so long
 * runs can be streamed. Throws RangeError on a bad option.
 */
export function workloadRecords(opts: WorkloadOptions = {}): Iterable<WorkloadRecord> {
  const r = resolve(opts);
  return { [Symbol.iterator]: () => new WorkloadGenerator(r).records() };
}

/** The whole workload as an array sorted by sendAtMs. */
export function planWorkload(opts: WorkloadOptions = {}): WorkloadRecord[] {
  return [...workloadRecords(opts)];
}

/**
 * Exactly `count` records, for tests that want N messages and do not care about timing
 * (the records still carry a nominal sendAtMs). Timing options are ignored.
 */
export function planBatch(
  count: number,
  opts: Omit<WorkloadOptions, 'count' | 'durationMs' | 'ratePerSec'> = {},
): WorkloadRecord[] {
  return planWorkload({ ...opts, count, ratePerSec: 1000 });
}

/** Counts records per kind. */
export function countKinds(records: Iterable<WorkloadRecord>): Record<RecordKind, number> {
  const counts: Record<RecordKind, number> = { profile: 0, event: 0, duplicate: 0, poison: 0 };
  for (const r of records) counts[r.kind]++;
  return counts;
}
