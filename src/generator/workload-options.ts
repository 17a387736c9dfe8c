import { Rng } from './rng.js';
/**
 * The workload's options and shapes, and their validation: what `planWorkload` and
 * `rxingest produce` accept, resolved once into the settings the generator runs on.
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

export interface Resolved {
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

export function resolve(opts: WorkloadOptions): Resolved {
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
