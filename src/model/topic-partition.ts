/**
 * The one key of a topic-partition in the worker's maps and sets, and how it reads in a
 * message: `topic[partition]`. A Kafka topic name holds only letters, digits, `.`, `_` and
 * `-`, so no two topic-partitions share a key.
 */
export const partitionKey = (topic: string, partition: number): string => `${topic}[${partition}]`;
