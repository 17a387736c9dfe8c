/** The contract's ingestion message, after validation. */
export type IngestMessage = ProfileUpdate | UserEvent;

interface MessageBase {
  /** Globally unique message id: the dedup key. */
  readonly id: string;
  /** The client the message is about: grouping and partition key. */
  readonly clientId: string;
  /** When the source created it (ISO 8601, as sent). */
  readonly ts: string;
}

export interface ProfileUpdate extends MessageBase {
  readonly type: 'profile';
  /** Source-owned version, grows per clientId. */
  readonly version: number;
  /** The profile fields this update sets. */
  readonly data: Readonly<Record<string, unknown>>;
}

export interface UserEvent extends MessageBase {
  readonly type: 'event';
  /** What happened. */
  readonly name: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** Where a record came from: enough to find it again and to tell a replay from a re-sent copy. */
export interface SourcePosition {
  readonly topic: string;
  readonly partition: number;
  /** Kafka offset as a string (kafkajs hands offsets over as strings; they may exceed 2^53). */
  readonly offset: string;
}

/** A raw Kafka record as the graph receives it. */
export interface RawRecord extends SourcePosition {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, Buffer | string | (Buffer | string)[] | undefined>>;
  /**
   * When the fetch handed it to the partition (ms since the epoch): splits a record's latency
   * into Kafka's part (its `ts` to here) and the worker's (here to indexed).
   */
  readonly receivedAt?: number;
  /**
   * Not a record but the end of a gap the fetch skipped (transaction markers, records of
   * aborted transactions, compacted records): `offset` is the gap's last offset. It is done
   * at once, so the committed offset reaches the partition's end past such gaps.
   */
  readonly gap?: true;
}

/** A fetched Kafka message (kafkajs's shape) as the graph receives it. */
export const fetchedRecord = (
  topic: string,
  partition: number,
  m: Pick<RawRecord, 'offset' | 'key' | 'value' | 'headers'>,
  receivedAt: number,
): RawRecord => ({
  topic,
  partition,
  offset: m.offset,
  key: m.key,
  value: m.value,
  headers: m.headers,
  receivedAt,
});

/** A validated message together with the record it came from. */
export interface Envelope<M extends IngestMessage = IngestMessage> {
  readonly message: M;
  readonly record: RawRecord;
}

/** What a record with a null value (a tombstone) does: the TOMBSTONES setting (contract, "Input"). */
export type TombstonePolicy = 'dead-letter' | 'ignore' | 'delete';

/** Error classes written to the dead-letter topic's `x-error-class` header. */
export type ErrorClass = 'invalid-json' | 'schema' | 'too-large' | 'rejected' | 'tombstone';

/** `topic/partition/offset`: who processed an id. A replay has the same origin, a re-sent copy another. */
export type OriginKey = string;

/**
 * Joined rather than concatenated: join makes one flat string where `+` makes a chain of
 * pieces, which is kept as long as the key (an owner mark waits for its Redis round trip) and
 * then flattened into a second copy when Redis is sent it.
 */
export const originKeyOf = (r: SourcePosition): OriginKey => [r.topic, r.partition, r.offset].join('/');

/** A record that cannot be ingested, and why. */
export interface Poison {
  readonly record: RawRecord;
  readonly errorClass: ErrorClass;
  readonly reason: string;
}
