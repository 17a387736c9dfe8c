import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

/**
 * patches/kafkajs+2.2.4.patch, admin part: fetchTopicOffsets and fetchTopicOffsetsByTimestamp
 * refresh the metadata and ask again when the leader they asked moved or died. kafkajs as
 * published gave up at once (only an unknown topic refreshed), and its metadata ages out only
 * after 5 minutes: the progress ledger, the lag monitor and the tools kept asking a dead node.
 */
const require = createRequire(import.meta.url);
const createAdmin = require('kafkajs/src/admin/index.js') as (o: object) => {
  fetchTopicOffsets: (topic: string) => Promise<{ partition: number; high: string; low: string }[]>;
  fetchTopicOffsetsByTimestamp: (
    topic: string,
    ts?: number,
  ) => Promise<{ partition: number; offset: string }[]>;
};
const { createLogger, LEVELS } = require('kafkajs/src/loggers/index.js') as {
  createLogger: (o: object) => unknown;
  LEVELS: { NOTHING: number };
};
const { createErrorFromCode } = require('kafkajs/src/protocol/error.js') as {
  createErrorFromCode: (code: number) => Error;
};
const { KafkaJSConnectionError } = require('kafkajs/src/errors.js') as {
  KafkaJSConnectionError: new (m: string) => Error;
};

type Offsets = { topic: string; partitions: { partition: number; offset: string }[] }[];
type Fetch = (topics: { topic: string; fromBeginning: boolean }[], stale: boolean) => Offsets;

/** Partition 0's offsets as a leader answers them: 0 from the beginning, 42 at the end. */
const answer: Fetch = (topics) =>
  topics.map(({ topic, fromBeginning }) => ({
    topic,
    partitions: [{ partition: 0, offset: fromBeginning ? '0' : '42' }],
  }));

/** An admin on a one-partition cluster whose metadata is stale until refreshed; `fetch` answers. */
function adminOn(fetch: Fetch, metadata = (stale: boolean) => [{ partitionId: 0, leader: stale ? 1 : 2 }]) {
  let stale = true;
  let refreshes = 0;
  const cluster = {
    addTargetTopic: async () => undefined,
    refreshMetadataIfNecessary: async () => undefined,
    refreshMetadata: async () => {
      refreshes++;
      stale = false;
    },
    findTopicPartitionMetadata: () => metadata(stale),
    fetchTopicsOffset: async (topics: { topic: string; fromBeginning: boolean }[]) => fetch(topics, stale),
  };
  const admin = createAdmin({
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined }),
    cluster,
    retry: { retries: 3, initialRetryTime: 1, maxRetryTime: 5 },
  });
  return { admin, refreshes: () => refreshes };
}

/** The old leader (named by stale metadata) fails with `failure`; the new one answers. */
const movedLeader = (failure: () => Error) =>
  adminOn((topics, stale) => {
    if (stale) throw failure();
    return answer(topics, stale);
  });

const NOT_LEADER_FOR_PARTITION = 6;

describe('kafkajs admin offsets when a partition leader moved (patched)', () => {
  it.each([
    ['NOT_LEADER_FOR_PARTITION', () => createErrorFromCode(NOT_LEADER_FOR_PARTITION)],
    ['a connection refused by the dead node', () => new KafkaJSConnectionError('connect ECONNREFUSED')],
  ])('fetchTopicOffsets refreshes the metadata and asks the new leader after %s', async (_, failure) => {
    const { admin, refreshes } = movedLeader(failure);
    await expect(admin.fetchTopicOffsets('t')).resolves.toEqual([
      { partition: 0, offset: '42', high: '42', low: '0' },
    ]);
    expect(refreshes()).toBe(1);
  });

  it('fetchTopicOffsetsByTimestamp does the same', async () => {
    const { admin, refreshes } = movedLeader(() => createErrorFromCode(NOT_LEADER_FOR_PARTITION));
    await expect(admin.fetchTopicOffsetsByTimestamp('t', Date.now())).resolves.toEqual([
      { partition: 0, offset: '42' },
    ]);
    expect(refreshes()).toBe(1);
  });

  it('asks again when its two answers disagree (a partition missing from one: metadata moved in between)', async () => {
    let lows = 0;
    const { admin, refreshes } = adminOn((topics, stale) =>
      topics[0]!.fromBeginning && lows++ === 0
        ? [{ topic: topics[0]!.topic, partitions: [] }]
        : answer(topics, stale),
    );
    await expect(admin.fetchTopicOffsets('t')).resolves.toEqual([
      { partition: 0, offset: '42', high: '42', low: '0' },
    ]);
    expect(refreshes()).toBe(1);
  });

  it('asks again, after a refresh, when the metadata has no partition of the topic yet (upstream answered [])', async () => {
    const { admin, refreshes } = adminOn(answer, (stale) => (stale ? [] : [{ partitionId: 0, leader: 1 }]));
    await expect(admin.fetchTopicOffsets('t')).resolves.toEqual([
      { partition: 0, offset: '42', high: '42', low: '0' },
    ]);
    expect(refreshes()).toBe(1);
  });

  it('still gives up at once on an error that no refresh can cure', async () => {
    const { admin, refreshes } = movedLeader(() => createErrorFromCode(29)); // TOPIC_AUTHORIZATION_FAILED
    await expect(admin.fetchTopicOffsets('t')).rejects.toThrow(/authorization/i);
    expect(refreshes()).toBe(0);
  });
});
