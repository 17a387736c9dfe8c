/**
 * A deterministic, seeded model of the traffic rxingest ingests: profile updates, events,
 * producer-retry duplicates and poison, each with the time (relative to the start of the run)
 * at which it should be sent.
 *
 * Same options (seed included) ⇒ byte-identical records. No clock and no Math.random are read:
 * message timestamps are `baseTimeMs + sendAtMs`.
 */

import { DuplicateQueue } from './duplicate-queue.js';
import { bare, encode, type Json } from './json-values.js';
import { poisonValue } from './poison.js';
import { Rng } from './rng.js';
import {
  HOSTILE_KEY_VARIANTS,
  type PoisonKind,
  PROFILE_FIELDS,
  type RecordKind,
  type Resolved,
  resolve,
  type WorkloadOptions,
  type WorkloadRecord,
} from './workload-options.js';

export { Rng } from './rng.js';
export * from './workload-options.js';

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

    const made = poisonValue(kind, {
      rng,
      asProfile,
      maxMessageBytes: r.maxMessageBytes,
      template,
      purchase: () => this.eventMessage(at, clientId, 'purchase'),
    });
    return out(made.value, made.detail, made.keyless ? null : clientId);
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
