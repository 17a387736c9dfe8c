import type { TopicRanges } from '../topic-reader.js';

/** Where each topic was read from and to, and what lay beyond the committed offsets. */
export interface Snapshot {
  readonly inputs: TopicRanges[];
  readonly dlq: TopicRanges[];
  readonly triggers: TopicRanges[];
  /** Per input "topic/partition": the committed offset (the log start when the group has none). */
  readonly committed: Map<string, bigint>;
  /** Per input "topic/partition": the first offset read. */
  readonly readFrom: Map<string, bigint>;
  /** Records past the committed offsets, per "topic/partition". */
  readonly beyond: Map<string, bigint>;
  /** The read does not start at the beginning of the topics (`--since`, or retention removed records). */
  readonly partial: boolean;
  readonly missingOutputTopics: string[];
}
