import type { TombstonePolicy, TriggerRule } from '../../config/config.js';
import type { ProfileUpdate, UserEvent } from '../../model/message.js';
import { parseRecord } from '../../model/parse.js';
import { beats, type FieldStamp } from '../../model/profile-merge.js';
import { triggerRecords } from '../../model/records.js';
import { REPLAY_OF } from '../../model/replay.js';
import { canonicalJson, digest } from '../canonical.js';
import type { FetchedRecord } from '../topic-reader.js';

/** The dead-letter classes of the contract, tombstones included. */
export type DeadLetterClass =
  | 'invalid-json'
  | 'schema'
  | 'too-large'
  | 'rejected'
  | 'tombstone'
  | (string & {});

/** "topic/partition/offset": a record's position, the key of dead letters and origins. */
export const positionKey = (topic: string, partition: number | string, offset: string | number | bigint) =>
  `${topic}/${partition}/${offset}`;

/** A client's expected profile: the contract's per-field merge of its accepted updates. */
export interface ClientExpectation {
  version: number;
  /** Null-safe: field names come from outside (`__proto__` is a field like any other). */
  readonly fields: Map<string, { value: unknown; stamp: FieldStamp }>;
  /** Unique updates since the last delete. */
  updates: number;
  /** "topic/partition" of the first record seen for the client, and whether others carried it too. */
  home: string;
  multiPartition: boolean;
  /** A delete (TOMBSTONES=delete) was seen for this client. */
  deleted: boolean;
  /** An id of this client was seen with two different bodies: which one won depends on arrival order. */
  conflicting: boolean;
  /**
   * Once the client's updates come through several partitions: per "topic/partition", the
   * highest version and the field stamps of its updates there, what `stale` is judged against
   * (see Expectation.profile). Undefined while one partition carries them all.
   */
  byPartition?: Map<string, PartitionStamps>;
}

/** What a client's earlier updates in one partition set: its highest version and each field's (version, id). */
export interface PartitionStamps {
  version: number;
  readonly stamps: Map<string, FieldStamp>;
}

export interface ExpectationSettings {
  readonly maxMessageBytes: number;
  readonly tombstones: TombstonePolicy;
  readonly rules: readonly TriggerRule[];
  readonly triggersTopic: string;
  /** Per "topic/partition": the group's committed offset. Records at or past it are not expected yet. */
  readonly committed: ReadonlyMap<string, bigint>;
  /** Positions the DLQ holds as `rejected` (Elasticsearch refused the document): not expected in the indices. */
  readonly rejected: ReadonlySet<string>;
  /** `--since`: records with an older Kafka timestamp are skipped. */
  readonly sinceMs?: number;
}

/** Events kept per id: one 52-bit digest of (origin, body) per copy; MATCHED once a document matched. */
export const MATCHED = -1;

/**
 * The state the contract implies for the records read so far, kept small: per event id only
 * digests, per client the merged fields, per poison record its position and class. Records
 * past the committed offsets are "pending": remembered only so that output they already
 * caused is not taken for a difference.
 */
export class Expectation {
  readonly counts = {
    messages: 0,
    unique: 0,
    duplicates: 0,
    poison: 0,
    rejected: 0,
    tombstonesIgnored: 0,
    deletes: 0,
    pending: 0,
    skippedBeforeSince: 0,
    /** Unique profile updates every field of which was already outranked when they came (offset order). */
    stale: 0,
  };
  /** Dead letters expected, by class. */
  readonly deadLetters = new Map<DeadLetterClass, number>();
  /** Position → class of every poison record in the committed range. */
  readonly poison = new Map<string, DeadLetterClass>();
  /** Event id → digest(s) of its copies, or MATCHED. */
  readonly events = new Map<string, number | number[]>();
  /** Profile update id → digest of its body (dedup, and conflicting copies). */
  readonly profileIds = new Map<string, number>();
  readonly clients = new Map<string, ClientExpectation>();
  /** Trigger id → digest of the trigger's value. */
  readonly triggers = new Map<string, number>();
  /** Triggers whose event id came with different bodies: cannot be checked. */
  readonly uncertainTriggers = new Set<string>();
  /** Dead letters that a replayed record in the input points at (`x-replay-of`). */
  readonly replayedDeadLetters = new Set<string>();
  /** Pending records (past the committed offsets), bounded by the lag. */
  readonly pendingEvents = new Map<string, number[]>();
  readonly pendingProfileIds = new Set<string>();
  readonly pendingMaxVersion = new Map<string, number>();

  constructor(private readonly settings: ExpectationSettings) {}

  add(r: FetchedRecord): void {
    if (this.settings.sinceMs !== undefined && r.timestamp < this.settings.sinceMs) {
      this.counts.skippedBeforeSince++;
      return;
    }
    const replayOf = r.headers[REPLAY_OF];
    if (replayOf !== undefined) this.replayedDeadLetters.add(String(replayOf));
    const committed = this.settings.committed.get(`${r.topic}/${r.partition}`) ?? 0n;
    if (BigInt(r.offset) >= committed) {
      this.addPending(r);
      return;
    }
    this.counts.messages++;
    const position = positionKey(r.topic, r.partition, r.offset);
    if (r.value === null) {
      this.tombstone(r, position);
      return;
    }
    const parsed = parseRecord(r, this.settings.maxMessageBytes);
    if (!parsed.ok) {
      // A null value is a tombstone (handled above); poison is a dead letter of its class.
      if (!('tombstone' in parsed)) this.expectDeadLetter(position, parsed.errorClass);
      return;
    }
    if (this.settings.rejected.has(position)) {
      // Elasticsearch refused this document; the dead letter is the expected outcome.
      this.counts.rejected++;
      this.expectDeadLetter(position, 'rejected');
      return;
    }
    const m = parsed.message;
    if (m.type === 'event') this.event(m, r);
    else this.profile(m, r);
  }

  private expectDeadLetter(position: string, cls: DeadLetterClass): void {
    this.counts.poison++;
    this.poison.set(position, cls);
    this.deadLetters.set(cls, (this.deadLetters.get(cls) ?? 0) + 1);
  }

  private tombstone(r: FetchedRecord, position: string): void {
    const policy = this.settings.tombstones;
    if (policy === 'dead-letter') {
      this.expectDeadLetter(position, 'tombstone');
    } else if (policy === 'ignore' || r.key === null) {
      this.counts.tombstonesIgnored++;
    } else {
      this.counts.deletes++;
      const c = this.client(r.key.toString('utf8'), r);
      c.fields.clear();
      c.version = -1;
      c.updates = 0;
      c.deleted = true;
      for (const p of c.byPartition?.values() ?? []) {
        p.version = -1;
        p.stamps.clear();
      }
    }
  }

  private client(clientId: string, r: FetchedRecord): ClientExpectation {
    const tp = `${r.topic}/${r.partition}`;
    let c = this.clients.get(clientId);
    if (c === undefined) {
      c = {
        version: -1,
        fields: new Map(),
        updates: 0,
        home: tp,
        multiPartition: false,
        deleted: false,
        conflicting: false,
      };
      this.clients.set(clientId, c);
    } else if (c.home !== tp) {
      c.multiPartition = true;
      if (c.byPartition === undefined) {
        // Until now one partition carried every update: the merged fields are its own.
        const home = new Map<string, FieldStamp>();
        for (const [field, { stamp }] of c.fields) home.set(field, stamp);
        c.byPartition = new Map([[c.home, { version: c.version, stamps: home }]]);
      }
      if (!c.byPartition.has(tp)) c.byPartition.set(tp, { version: -1, stamps: new Map() });
    }
    return c;
  }

  private event(m: UserEvent, r: FetchedRecord): void {
    const copy = eventDigest(r.topic, r.partition, r.offset, m);
    const known = this.events.get(m.id);
    if (known !== undefined) {
      this.counts.duplicates++;
      this.events.set(m.id, Array.isArray(known) ? [...known, copy] : [known, copy]);
      this.checkTriggersOfCopy(m);
      return;
    }
    if (this.profileIds.has(m.id)) {
      // The id was a profile update's: the worker drops this as a duplicate.
      this.counts.duplicates++;
      return;
    }
    this.counts.unique++;
    this.events.set(m.id, copy);
    for (const t of triggerRecords(this.settings.triggersTopic, this.settings.rules, m)) {
      const value = JSON.parse(String(t.value)) as { id: string };
      this.triggers.set(value.id, digest(canonicalJson(value)));
    }
  }

  /** A re-sent copy whose body differs may match other rules: those triggers depend on arrival order. */
  private checkTriggersOfCopy(m: UserEvent): void {
    const mine = new Map<string, number>();
    for (const t of triggerRecords(this.settings.triggersTopic, this.settings.rules, m)) {
      const value = JSON.parse(String(t.value)) as { id: string };
      mine.set(value.id, digest(canonicalJson(value)));
    }
    for (const rule of this.settings.rules) {
      const id = `${m.id}:${rule.id}`;
      if (mine.get(id) !== this.triggers.get(id)) this.uncertainTriggers.add(id);
    }
  }

  private profile(m: ProfileUpdate, r: FetchedRecord): void {
    const body = digest(canonicalJson({ clientId: m.clientId, version: m.version, data: m.data }));
    const c = this.client(m.clientId, r);
    const known = this.profileIds.get(m.id);
    if (known !== undefined || this.events.has(m.id)) {
      this.counts.duplicates++;
      if (known !== undefined && known !== body) c.conflicting = true;
      return;
    }
    this.counts.unique++;
    this.profileIds.set(m.id, body);
    c.updates++;
    const stamp = { version: m.version, id: m.id };
    const fields = Object.keys(m.data);
    // Stale: every field (and the version) already outranked by the client's earlier updates
    // in offset order. Across partitions there is no such order (the worker takes them
    // concurrently, and this read interleaves them as its fetches come back), so a client
    // whose updates come through several partitions is judged against the earlier updates of
    // the same partition: a count that does not change from one run of reconcile to the next.
    const own = c.byPartition?.get(`${r.topic}/${r.partition}`);
    const earlier = own
      ? { version: own.version, stampOf: (f: string) => own.stamps.get(f) }
      : { version: c.version, stampOf: (f: string) => c.fields.get(f)?.stamp };
    const changed = m.version > earlier.version || fields.some((f) => beats(stamp, earlier.stampOf(f)));
    if (!changed) this.counts.stale++;
    if (own) {
      own.version = Math.max(own.version, m.version);
      for (const f of fields) if (beats(stamp, own.stamps.get(f))) own.stamps.set(f, stamp);
    }
    c.version = Math.max(c.version, m.version);
    for (const field of fields) {
      if (beats(stamp, c.fields.get(field)?.stamp)) c.fields.set(field, { value: m.data[field], stamp });
    }
  }

  private addPending(r: FetchedRecord): void {
    this.counts.pending++;
    if (r.value === null) return;
    const parsed = parseRecord(r, this.settings.maxMessageBytes);
    if (!parsed.ok) return;
    const m = parsed.message;
    if (m.type === 'event') {
      const copies = this.pendingEvents.get(m.id) ?? [];
      copies.push(eventDigest(r.topic, r.partition, r.offset, m));
      this.pendingEvents.set(m.id, copies);
    } else {
      this.pendingProfileIds.add(m.id);
      this.pendingMaxVersion.set(
        m.clientId,
        Math.max(this.pendingMaxVersion.get(m.clientId) ?? -1, m.version),
      );
    }
  }
}

/** The body of an event document as the contract defines it, with the record it came from. */
export function eventDigest(
  topic: string,
  partition: number | string,
  offset: string | number,
  body: { clientId: unknown; name: unknown; ts: unknown; data: unknown },
): number {
  const canonical = canonicalJson({ clientId: body.clientId, name: body.name, ts: body.ts, data: body.data });
  return digest(`${topic}\u0000${partition}\u0000${offset}\u0000${canonical}`);
}
