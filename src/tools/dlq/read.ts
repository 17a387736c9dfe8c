import type { Kafka } from 'kafkajs';
import type { Config } from '../../config/config.js';
import { CannotRun } from '../clients.js';
import { type FetchedRecord, readTopics, type TopicRanges, topicOffsets } from '../topic-reader.js';
import { type DeadLetter, deadLetterOf } from './dead-letter.js';

export interface DeadLetterFilter {
  readonly cls?: string;
  /** Only dead letters whose Kafka timestamp is at or after this. */
  readonly since?: Date;
}

/** The DLQ's partitions, from their start (or the first offset at `since`) to their end. */
async function dlqRanges(kafka: Kafka, config: Config, since?: Date): Promise<TopicRanges[]> {
  const topic = config.kafka.dlqTopic;
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) {
      throw new CannotRun(
        `the DLQ topic ${topic} does not exist on ${config.kafka.brokers.join(',')} (DLQ_TOPIC)`,
      );
    }
    const offsets = await topicOffsets(admin, topic);
    const bySince = since
      ? new Map(
          (await admin.fetchTopicOffsetsByTimestamp(topic, since.getTime())).map((o) => [
            o.partition,
            BigInt(o.offset),
          ]),
        )
      : undefined;
    return [
      {
        topic,
        partitions: offsets.map((o) => {
          const s = bySince?.get(o.partition);
          return { partition: o.partition, from: s !== undefined && s > o.low ? s : o.low, to: o.high };
        }),
      },
    ];
  } finally {
    await admin.disconnect();
  }
}

/** Every dead letter that passes the filter, in partition and offset order. */
export async function readDeadLetters(
  kafka: Kafka,
  config: Config,
  filter: DeadLetterFilter = {},
): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  const sinceMs = filter.since?.getTime();
  await readTopics(kafka, await dlqRanges(kafka, config, filter.since), (records) => {
    for (const r of records) {
      if (sinceMs !== undefined && r.timestamp < sinceMs) continue;
      const d = deadLetterOf(config.kafka.dlqTopic, r);
      if (filter.cls === undefined || d.cls === filter.cls) out.push(d);
    }
  });
  return out.sort((a, b) => a.partition - b.partition || (BigInt(a.offset) < BigInt(b.offset) ? -1 : 1));
}

/** The one record at topic/partition/offset, or why there is none. */
export async function readOne(
  kafka: Kafka,
  topic: string,
  partition: number,
  offset: bigint,
): Promise<{ record: FetchedRecord } | { gone: string }> {
  const admin = kafka.admin();
  await admin.connect();
  let bounds: { low: bigint; high: bigint } | undefined;
  try {
    if (!(await admin.listTopics()).includes(topic)) return { gone: `topic ${topic} does not exist` };
    bounds = (await topicOffsets(admin, topic)).find((o) => o.partition === partition);
  } finally {
    await admin.disconnect();
  }
  if (bounds === undefined) return { gone: `${topic} has no partition ${partition}` };
  if (offset < bounds.low)
    return {
      gone: `offset ${offset} of ${topic}/${partition} is gone (retention: the log starts at ${bounds.low})`,
    };
  if (offset >= bounds.high)
    return { gone: `offset ${offset} of ${topic}/${partition} is past its end (${bounds.high})` };
  let found: FetchedRecord | undefined;
  await readTopics(kafka, [{ topic, partitions: [{ partition, from: offset, to: offset + 1n }] }], (rs) => {
    found = rs[0] ?? found;
  });
  return found
    ? { record: found }
    : { gone: `${topic}/${partition}/${offset} is a transaction marker or an aborted record` };
}
