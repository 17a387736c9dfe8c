import { eventsIndexFor } from '../../model/event-index.js';
import { beats, type FieldStamp } from '../../model/profile-merge.js';
import { sameJson } from '../canonical.js';
import { Examples, originOf, outside, own, type ReadBounds } from './check-support.js';
import { type Expectation, eventDigest, MATCHED, positionKey } from './expectation.js';

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
