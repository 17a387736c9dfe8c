import { createRequire } from 'node:module';

/**
 * kafkajs 2.2.4 retries a produce per broker: one answer kept per broker, and a retry sent to
 * every broker without one, as soon as any request of the attempt failed. When a partition's
 * leader moves (a broker dies), that loses records (a partition moved to a broker that had
 * already answered is never sent) and duplicates them (the retry races a request still in
 * flight, whose success has already advanced the idempotent sequence numbers, so the copy is
 * appended as new) — inside a committed transaction, so triggers and dead letters went out
 * twice or never. patches/kafkajs+2.2.4.patch retries per topic-partition, after every request
 * of the attempt settled; like the read_committed fix, the worker checks it by behaviour.
 */

/** kafkajs's src/producer/sendMessages.js: a factory of the function every send goes through. */
export type SendMessagesFactory = (deps: {
  logger: unknown;
  cluster: unknown;
  partitioner: unknown;
  eosManager: unknown;
  retrier: unknown;
}) => (request: {
  acks: number;
  timeout?: number;
  compression?: number;
  topicMessages: { topic: string; messages: ProbeMessage[] }[];
}) => Promise<unknown>;

interface ProbeMessage {
  readonly partition: number;
  readonly value: string;
}

const require = createRequire(import.meta.url);

/** The function kafkajs actually uses (the installed file, patched or not). */
export function installedSendMessages(): SendMessagesFactory {
  return require('kafkajs/src/producer/sendMessages.js') as SendMessagesFactory;
}

/**
 * One leader move, as a broker death looks from a producer: broker 1 leads partition 0 and
 * broker 2 partitions 1 and 2; broker 1 answers NOT_LEADER_FOR_PARTITION, after which the
 * metadata says broker 2 leads all three. Broker 2 answers its first request before or after
 * broker 1's refusal (`broker2AnswersFirst`). The fake brokers keep sequence numbers the way
 * Kafka does: a batch at the next sequence is appended, a batch already appended is a
 * duplicate and acknowledged without appending.
 *
 * Returns what each partition's log holds in the end.
 */
export async function leaderMoveScenario(
  sendMessages: SendMessagesFactory,
  options: { broker2AnswersFirst: boolean },
): Promise<Map<number, string[]>> {
  const { createErrorFromCode } = require('kafkajs/src/protocol/error.js') as {
    createErrorFromCode: (code: number) => Error;
  };
  const createRetry = require('kafkajs/src/retry/index.js') as (o: object) => unknown;
  const NOT_LEADER_FOR_PARTITION = 6;

  const logs = new Map<number, { value: string; firstSequence: number }[]>([
    [0, []],
    [1, []],
    [2, []],
  ]);
  let leaders: Record<number, string> = { 0: '1', 1: '2', 2: '2' };
  let broker1Refused!: () => void;
  const broker1HasRefused = new Promise<void>((r) => {
    broker1Refused = r;
  });
  let retryQueued!: () => void;
  const retryWaitsForBroker2 = new Promise<void>((r) => {
    retryQueued = r;
  });
  const tick = () => new Promise<void>((r) => setImmediate(r));

  const append = (topicData: ProduceTopicData[]) => {
    for (const { partitions } of topicData) {
      for (const { partition, firstSequence, messages } of partitions) {
        const log = logs.get(partition)!;
        const next = log.length;
        if (firstSequence === next) {
          for (const [i, m] of messages.entries())
            log.push({ value: m.value, firstSequence: firstSequence + i });
        } else if (firstSequence + messages.length > next) {
          throw createErrorFromCode(45); // OUT_OF_ORDER_SEQUENCE_NUMBER: a gap, never expected here
        } // else a duplicate: acknowledged, not appended
      }
    }
  };
  const answer = (topicData: ProduceTopicData[]) => ({
    topics: topicData.map(({ topic, partitions }) => ({
      topicName: topic,
      partitions: partitions.map(({ partition }) => ({ partition, errorCode: 0, baseOffset: '0' })),
    })),
  });
  let broker2Requests = 0;
  const brokers: Record<string, { nodeId: string; produce: (r: ProduceRequest) => Promise<unknown> }> = {
    '1': {
      nodeId: '1',
      produce: async () => {
        if (options.broker2AnswersFirst) while (broker2Requests === 0) await tick();
        await tick();
        leaders = { 0: '2', 1: '2', 2: '2' };
        broker1Refused();
        throw createErrorFromCode(NOT_LEADER_FOR_PARTITION);
      },
    },
    '2': {
      nodeId: '2',
      produce: async ({ topicData }) => {
        broker2Requests++;
        if (!options.broker2AnswersFirst && broker2Requests === 1) {
          // Answer once a retry queues behind this request, or after a while if none does.
          await broker1HasRefused;
          await Promise.race([retryWaitsForBroker2, new Promise((r) => setTimeout(r, 20))]);
        }
        append(topicData);
        return answer(topicData);
      },
    },
  };

  const sequences = new Map<number, number>();
  const locks = new Map<string, Promise<void>>();
  const releases = new Map<string, () => void>();
  const eosManager = {
    isTransactional: () => false,
    getTransactionalId: () => undefined,
    getProducerId: () => 1,
    getProducerEpoch: () => 0,
    getSequence: (_t: string, p: number) => sequences.get(p) ?? 0,
    updateSequence: (_t: string, p: number, n: number) => sequences.set(p, (sequences.get(p) ?? 0) + n),
    acquireBrokerLock: async (b: { nodeId: string }) => {
      while (locks.has(b.nodeId)) {
        if (b.nodeId === '2') retryQueued();
        await locks.get(b.nodeId);
      }
      locks.set(
        b.nodeId,
        new Promise<void>((r) => {
          releases.set(b.nodeId, r);
        }),
      );
    },
    releaseBrokerLock: async (b: { nodeId: string }) => {
      const release = releases.get(b.nodeId);
      locks.delete(b.nodeId);
      release?.();
    },
  };
  const cluster = {
    targetTopics: new Set(['probe']),
    addMultipleTargetTopics: async () => undefined,
    refreshMetadataIfNecessary: async () => undefined,
    refreshMetadata: async () => undefined,
    isConnected: () => true,
    removeBroker: () => undefined,
    connect: async () => undefined,
    findTopicPartitionMetadata: () =>
      [0, 1, 2].map((partitionId) => ({ partitionId, leader: Number(leaders[partitionId]) })),
    findLeaderForPartitions: (_t: string, partitions: (string | number)[]) => {
      const out: Record<string, number[]> = {};
      for (const p of partitions.map(Number)) {
        const leader = leaders[p]!;
        out[leader] = [...(out[leader] ?? []), p];
      }
      return out;
    },
    findBroker: async ({ nodeId }: { nodeId: string }) => brokers[nodeId],
  };
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const send = sendMessages({
    logger: quiet,
    cluster,
    partitioner: ({ message }: { message: ProbeMessage }) => message.partition,
    eosManager,
    retrier: createRetry({ retries: 5, initialRetryTime: 1, maxRetryTime: 5 }),
  });
  await send({
    acks: -1,
    topicMessages: [
      {
        topic: 'probe',
        messages: [0, 1, 2].map((partition) => ({ partition, value: `record for partition ${partition}` })),
      },
    ],
  });
  return new Map([...logs].map(([p, log]) => [p, log.map((r) => r.value)]));
}

interface ProduceTopicData {
  readonly topic: string;
  readonly partitions: { partition: number; firstSequence: number; messages: ProbeMessage[] }[];
}
interface ProduceRequest {
  readonly topicData: ProduceTopicData[];
}

/** True when every record of both orders of the leader move is in its partition exactly once. */
export async function retriesProduceExactlyOnce(sendMessages: SendMessagesFactory): Promise<boolean> {
  for (const broker2AnswersFirst of [true, false]) {
    const logs = await leaderMoveScenario(sendMessages, { broker2AnswersFirst });
    for (const [p, log] of logs) {
      if (log.length !== 1 || log[0] !== `record for partition ${p}`) return false;
    }
  }
  return true;
}

/** Throws one clear line when the installed kafkajs would lose or repeat records on a leader move. */
export async function assertKafkajsProduceRetries(): Promise<void> {
  let sendMessages: SendMessagesFactory;
  try {
    sendMessages = installedSendMessages();
  } catch (err) {
    throw new Error(
      `kafkajs's produce retries cannot be checked (${(err as Error).message}); ` +
        'patches/kafkajs+2.2.4.patch fits kafkajs 2.2.4 only',
    );
  }
  if (!(await retriesProduceExactlyOnce(sendMessages))) {
    throw new Error(
      'kafkajs is installed without patches/kafkajs+2.2.4.patch, so a partition leader moving during a commit ' +
        'would lose or repeat triggers and dead letters: run `npm install` (or `npx patch-package`) without --ignore-scripts',
    );
  }
}
