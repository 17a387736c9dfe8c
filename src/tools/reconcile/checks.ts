import { eventsIndexFor } from '../../model/event-index.js';
import { beats, type FieldStamp } from '../../model/profile-merge.js';
import { canonicalJson, digest, sameJson } from '../canonical.js';
import { type DeadLetterClass, type Expectation, eventDigest, MATCHED, positionKey } from './expectation.js';

export const MAX_EXAMPLES = 10;

/** Up to MAX_EXAMPLES examples of one kind of difference, and how many there were. */
export class Examples<T> {
  readonly items: T[] = [];
  count = 0;
  add(example: () => T): void {
    this.count++;
    if (this.items.length < MAX_EXAMPLES) this.items.push(example());
  }
}

/** Where the read stopped and started, per "topic/partition": what is outside it is not judged. */
export interface ReadBounds {
  readonly committed: ReadonlyMap<string, bigint>;
  /** `--since`: the first offset read per partition. */
  readonly sinceStart?: ReadonlyMap<string, bigint>;
}

const isNonNegativeInt = (v: unknown) =>
  (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^\d+$/.test(v));

type Origin = { topic: string; partition: number; offset: number | string };
const originOf = (v: unknown): Origin | undefined => {
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  return typeof o.topic === 'string' && isNonNegativeInt(o.partition) && isNonNegativeInt(o.offset)
    ? (o as unknown as Origin)
    : undefined;
};

/** Is this position outside what was judged: not committed yet, or before `--since`? */
function outside(
  bounds: ReadBounds,
  topic: string,
  partition: number | string,
  offset: number | string | bigint,
) {
  const tp = `${topic}/${partition}`;
  const committed = bounds.committed.get(tp);
  if (committed === undefined) return undefined; // not an input partition
  const o = BigInt(offset);
  if (o >= committed) return 'ahead' as const;
  const since = bounds.sinceStart?.get(tp);
  if (since !== undefined && o < since) return 'before-since' as const;
  return 'inside' as const;
}

const own = (o: unknown, k: string): unknown =>
  o !== null && typeof o === 'object' && Object.hasOwn(o, k) ? (o as Record<string, unknown>)[k] : undefined;

/** The events index: every unique event once, in the index of its `ts`, with the body and origin of one of its records. */
export class EventsCheck {
  found = 0;
  ahead = 0;
  notJudged = 0;
  readonly missing = new Examples<string>();
  readonly extra = new Examples<{ id: string; index: string; origin?: string }>();
  readonly different = new Examples<{ id: string; index: string; why: string }>();

  constructor(
    private readonly exp: Expectation,
    private readonly pattern: string,
    private readonly bounds: ReadBounds,
  ) {}

  get expected(): number {
    return this.exp.events.size;
  }

  doc(index: string, id: string, source: unknown): void {
    const origin = originOf(own(source, 'origin'));
    const originText = origin && positionKey(origin.topic, origin.partition, origin.offset);
    const entry = this.exp.events.get(id);
    if (entry === undefined || entry === MATCHED) {
      const where = origin && outside(this.bounds, origin.topic, origin.partition, origin.offset);
      if (entry === undefined && (this.exp.pendingEvents.has(id) || where === 'ahead')) this.ahead++;
      else if (entry === undefined && this.bounds.sinceStart && where !== 'inside') this.notJudged++;
      else
        this.extra.add(() => ({
          id,
          index,
          ...(originText ? { origin: originText } : {}),
          ...(entry === MATCHED ? { why: 'a second document for this id' } : {}),
        }));
      return;
    }
    this.exp.events.set(id, MATCHED);
    this.found++;
    if (origin === undefined) {
      this.different.add(() => ({ id, index, why: 'no origin {topic, partition, offset}' }));
      return;
    }
    const body = {
      clientId: own(source, 'clientId'),
      name: own(source, 'name'),
      ts: own(source, 'ts'),
      data: own(source, 'data'),
    };
    const d = eventDigest(origin.topic, origin.partition, String(origin.offset), body);
    const copies = typeof entry === 'number' ? [entry] : entry;
    if (!copies.includes(d) && !this.exp.pendingEvents.get(id)?.includes(d)) {
      this.different.add(() => ({
        id,
        index,
        why: `body or origin (${originText}) is not that of any record with this id`,
      }));
      return;
    }
    const want = eventsIndexFor(this.pattern, String(body.ts));
    if (want !== index) this.different.add(() => ({ id, index, why: `in ${index}, expected in ${want}` }));
  }

  finish(): void {
    for (const [id, v] of this.exp.events) if (v !== MATCHED) this.missing.add(() => id);
  }
}

export interface FieldDifference {
  readonly clientId: string;
  readonly field?: string;
  readonly expected: unknown;
  readonly found: unknown;
}

const stampOf = (v: unknown): FieldStamp | undefined => {
  const version = own(v, 'version');
  const id = own(v, 'id');
  return typeof version === 'number' && typeof id === 'string' ? { version, id } : undefined;
};
const describeStamp = (value: unknown, stamp: FieldStamp | undefined) =>
  stamp === undefined ? { value } : { value, version: stamp.version, id: stamp.id };

/** The profiles index: per client, `version` and every field with its value and (version, id). */
export class ProfilesCheck {
  found = 0;
  ahead = 0;
  notJudged = 0;
  uncheckable = 0;
  readonly expected: number;
  readonly missing = new Examples<string>();
  readonly extra = new Examples<string>();
  readonly different = new Examples<FieldDifference>();
  private readonly seen = new Set<string>();

  constructor(
    private readonly exp: Expectation,
    private readonly since: boolean,
  ) {
    let n = 0;
    for (const c of exp.clients.values()) if (c.version >= 0) n++;
    this.expected = n;
  }

  private uncertain(clientId: string): boolean {
    const c = this.exp.clients.get(clientId);
    // The contract makes these order-dependent: a delete and updates through several
    // partitions, or one id with two bodies.
    return c !== undefined && ((c.deleted && c.multiPartition) || c.conflicting);
  }

  doc(clientId: string, source: unknown): void {
    this.seen.add(clientId);
    const c = this.exp.clients.get(clientId);
    if (this.uncertain(clientId)) {
      this.uncheckable++;
      return;
    }
    if (c === undefined || c.version < 0) {
      if (this.exp.pendingMaxVersion.has(clientId)) this.ahead++;
      else if (this.since) this.notJudged++;
      else this.extra.add(() => clientId);
      return;
    }
    this.found++;
    const version = own(source, 'version');
    const pendingVersion = this.exp.pendingMaxVersion.get(clientId) ?? -1;
    const versionOk = this.since
      ? typeof version === 'number' && version >= c.version
      : version === c.version ||
        (typeof version === 'number' && version > c.version && version <= pendingVersion);
    if (!versionOk)
      this.different.add(() => ({ clientId, field: undefined, expected: c.version, found: version }));

    const data = own(source, 'data');
    const stamps = own(source, 'fieldVersions');
    for (const [field, want] of c.fields) {
      const has = data !== null && typeof data === 'object' && Object.hasOwn(data, field);
      const value = has ? (data as Record<string, unknown>)[field] : undefined;
      const stamp = stampOf(own(stamps, field));
      if (
        has &&
        stamp !== undefined &&
        stamp.version === want.stamp.version &&
        stamp.id === want.stamp.id &&
        sameJson(value, want.value)
      )
        continue;
      if (
        stamp !== undefined &&
        beats(stamp, want.stamp) &&
        (this.since || this.exp.pendingProfileIds.has(stamp.id))
      )
        continue;
      this.different.add(() => ({
        clientId,
        field,
        expected: describeStamp(want.value, want.stamp),
        found: has ? describeStamp(value, stamp) : 'no such field',
      }));
    }
    if (!this.since && data !== null && typeof data === 'object') {
      for (const field of Object.keys(data)) {
        if (c.fields.has(field)) continue;
        const stamp = stampOf(own(stamps, field));
        if (stamp !== undefined && this.exp.pendingProfileIds.has(stamp.id)) continue;
        this.different.add(() => ({
          clientId,
          field,
          expected: 'no such field',
          found: describeStamp((data as Record<string, unknown>)[field], stamp),
        }));
      }
    }
  }

  finish(): void {
    for (const [clientId, c] of this.exp.clients) {
      if (this.seen.has(clientId) || c.version < 0) continue;
      if (this.uncertain(clientId)) this.uncheckable++;
      else this.missing.add(() => clientId);
    }
  }
}

/** The triggers topic (read read_committed): every expected trigger exactly once, with its value. */
export class TriggersCheck {
  found = 0;
  ahead = 0;
  notJudged = 0;
  uncheckable = 0;
  /** Found triggers nobody expected, and how often. The expected ones are counted in place. */
  private readonly others = new Map<string, number>();
  readonly missing = new Examples<string>();
  readonly duplicate = new Examples<{ id: string; times: number }>();
  readonly unexpected = new Examples<{ id: string; why: string }>();
  readonly different = new Examples<{ id: string; why: string }>();

  constructor(
    private readonly exp: Expectation,
    private readonly since: boolean,
  ) {}

  get expected(): number {
    return this.exp.triggers.size;
  }

  record(key: Buffer | null, value: Buffer | null): void {
    this.found++;
    let v: unknown;
    try {
      v = JSON.parse(String(value));
    } catch {
      this.unexpected.add(() => ({ id: '(not JSON)', why: String(value).slice(0, 80) }));
      return;
    }
    const id = own(v, 'id');
    if (typeof id !== 'string') {
      this.unexpected.add(() => ({ id: '(no id)', why: String(value).slice(0, 80) }));
      return;
    }
    if (this.exp.uncertainTriggers.has(id)) {
      this.uncheckable++;
      return;
    }
    const want = this.exp.triggers.get(id);
    if (want !== undefined && want < 0) {
      // Seen before: expected digests are ≥ 0, -n means "found n times".
      this.exp.triggers.set(id, want - 1);
      return;
    }
    if (want !== undefined) this.exp.triggers.set(id, -1);
    else {
      const times = (this.others.get(id) ?? 0) + 1;
      this.others.set(id, times);
      if (times > 1) return;
    }
    if (want === undefined) {
      const source = own(v, 'sourceId');
      if (typeof source === 'string' && this.exp.pendingEvents.has(source)) this.ahead++;
      else if (this.since) this.notJudged++;
      else this.unexpected.add(() => ({ id, why: 'no unique event matches a rule with this id' }));
      return;
    }
    if (digest(canonicalJson(v)) !== want) this.different.add(() => ({ id, why: `value ${String(value)}` }));
    else if (key?.toString('utf8') !== own(v, 'clientId'))
      this.different.add(() => ({
        id,
        why: `key ${JSON.stringify(key?.toString('utf8') ?? null)} is not the clientId`,
      }));
  }

  finish(): void {
    for (const [id, v] of this.exp.triggers) {
      if (this.exp.uncertainTriggers.has(id)) continue;
      if (v >= 0) this.missing.add(() => id);
      else if (v < -1) this.duplicate.add(() => ({ id, times: -v }));
    }
  }
}

/** One source record's dead letters in the DLQ. */
export interface DeadLetterEntry {
  readonly cls: DeadLetterClass;
  /** "partition:offset" in the DLQ of each dead letter of this source record. */
  readonly at: string[];
}

/** The DLQ: every poison record once, with its class. */
export class DeadLettersCheck {
  readonly bySource = new Map<string, DeadLetterEntry>();
  found = 0;
  replayed = 0;
  ahead = 0;
  notJudged = 0;
  readonly missing = new Examples<{ source: string; cls: DeadLetterClass }>();
  readonly duplicate = new Examples<{ source: string; at: string[] }>();
  readonly differentClass = new Examples<{
    source: string;
    expected: DeadLetterClass;
    found: DeadLetterClass;
  }>();
  readonly unexpected = new Examples<{ at: string; source: string; cls: DeadLetterClass; why: string }>();

  constructor(private readonly dlqTopic: string) {}

  /** Called while reading the DLQ (before the input): indexes the dead letters by source. */
  deadLetter(partition: number, offset: string, headers: Readonly<Record<string, unknown>>): void {
    this.found++;
    const h = (k: string) => {
      const v = Object.hasOwn(headers, k) ? headers[k] : undefined;
      return v === undefined ? undefined : String(v);
    };
    const topic = h('x-source-topic');
    const p = h('x-source-partition');
    const o = h('x-source-offset');
    const cls = h('x-error-class') ?? '(none)';
    const at = `${partition}:${offset}`;
    if (topic === undefined || p === undefined || o === undefined || !/^\d+$/.test(p) || !/^\d+$/.test(o)) {
      this.unexpected.add(() => ({
        at,
        source: '(no x-source-* headers)',
        cls,
        why: 'not a dead letter of the contract',
      }));
      return;
    }
    const source = positionKey(topic, p, o);
    const entry = this.bySource.get(source);
    if (entry === undefined) this.bySource.set(source, { cls, at: [at] });
    else entry.at.push(at);
  }

  /** Positions dead-lettered as `rejected`: the input read must not expect them in the indices. */
  rejectedPositions(): Set<string> {
    const out = new Set<string>();
    for (const [source, e] of this.bySource) if (e.cls === 'rejected') out.add(source);
    return out;
  }

  compare(exp: Expectation, bounds: ReadBounds): void {
    for (const [source, cls] of exp.poison) {
      const e = this.bySource.get(source);
      if (e === undefined) {
        this.missing.add(() => ({ source, cls }));
        continue;
      }
      this.bySource.delete(source);
      if (e.cls !== cls) this.differentClass.add(() => ({ source, expected: cls, found: e.cls }));
      if (e.at.length > 1) this.duplicate.add(() => ({ source, at: e.at }));
    }
    for (const [source, e] of this.bySource) {
      const [topic, partition, offset] = splitPosition(source);
      const where = outside(bounds, topic, partition, offset);
      if (e.at.some((at) => exp.replayedDeadLetters.has(`${this.dlqTopic}/${at.replace(':', '/')}`))) {
        this.replayed += e.at.length;
      } else if (where === 'ahead') this.ahead += e.at.length;
      else if (where === 'before-since') this.notJudged += e.at.length;
      else {
        this.unexpected.add(() => ({
          at: e.at.join(','),
          source,
          cls: e.cls,
          why:
            where === undefined
              ? 'its source is not an input topic partition'
              : 'its source record is valid with the current settings, and was not replayed',
        }));
      }
    }
  }
}

function splitPosition(p: string): [string, string, string] {
  const o = p.lastIndexOf('/');
  const q = p.lastIndexOf('/', o - 1);
  return [p.slice(0, q), p.slice(q + 1, o), p.slice(o + 1)];
}
