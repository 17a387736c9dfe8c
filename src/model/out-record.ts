/** A record to publish to Kafka with the offset commit (triggers, dead letters). */
export interface OutRecord {
  readonly topic: string;
  readonly key: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers?: Record<string, string>;
}
