import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

/**
 * patches/kafkajs+2.2.4.patch keeps the coordinators a transactional producer found, in
 * kafkajs's transaction manager (src/producer/eosManager), until a request to one fails.
 * Published, kafkajs asks for them (FindCoordinator) before every AddPartitionsToTxn,
 * AddOffsetsToTxn, TxnOffsetCommit and EndTxn: four round trips per transaction that commits
 * offsets. Here against a cluster double that counts lookups and moves coordinators;
 * test/integration/kafkajs/kafkajs-transaction-coordinators.test.ts counts the requests on the real broker.
 */
const require = createRequire(import.meta.url);

interface EosManager {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  addPartitionsToTransaction(
    topicData: { topic: string; partitions: { partition: number }[] }[],
  ): Promise<void>;
  sendOffsets(args: {
    consumerGroupId: string;
    topics: { topic: string; partitions: { partition: number; offset: string }[] }[];
  }): Promise<void>;
  commit(): Promise<void>;
}
type EosManagerFactory = (options: {
  logger: unknown;
  cluster: unknown;
  transactional: boolean;
  transactionalId: string;
}) => EosManager;

const installed = require('kafkajs/src/producer/eosManager/index.js') as EosManagerFactory;
const published = require('../../../harness/kafkajs-2.2.4/eos-manager.original.cjs') as EosManagerFactory;
const COORDINATOR_TYPES = require('kafkajs/src/protocol/coordinatorTypes') as {
  GROUP: number;
  TRANSACTION: number;
};

const GROUP = 'the-group';
const TRANSACTIONAL_ID = 'the-transactional-id';

const quiet = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  namespace() {
    return quiet;
  },
};

/** kafkajs's error for a broker's error code, and for a connection that closed. */
const protocolError = (type: string) =>
  Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type });
const connectionClosed = () =>
  Object.assign(new Error('Closed connection'), { name: 'KafkaJSConnectionClosedError' });

/** A broker that records the coordinator requests it answers, and fails those it is told to, once. */
class BrokerDouble {
  readonly requests: string[] = [];
  /** Request names → the error their next request fails with (then they are answered again). */
  readonly failNext = new Map<string, () => Error>();

  constructor(readonly nodeId: number) {}

  private answer(name: string) {
    this.requests.push(name);
    const failure = this.failNext.get(name);
    this.failNext.delete(name);
    return failure ? Promise.reject(failure()) : Promise.resolve({});
  }

  initProducerId = () => {
    this.requests.push('InitProducerId');
    return Promise.resolve({ producerId: 1000, producerEpoch: 0 });
  };
  addPartitionsToTxn = () => this.answer('AddPartitionsToTxn');
  addOffsetsToTxn = () => this.answer('AddOffsetsToTxn');
  txnOffsetCommit = () => this.answer('TxnOffsetCommit');
  endTxn = () => this.answer('EndTxn');
}

/** A cluster of brokers 1 and 2 whose coordinators can move, counting FindCoordinator lookups. */
class ClusterDouble {
  readonly retry = { retries: 3, initialRetryTime: 1, maxRetryTime: 5 };
  readonly brokers = new Map([1, 2].map((id) => [id, new BrokerDouble(id)]));
  readonly coordinator = new Map<number, number>([
    [COORDINATOR_TYPES.TRANSACTION, 1],
    [COORDINATOR_TYPES.GROUP, 1],
  ]);
  readonly lookups: { type: number; id: string }[] = [];
  readonly gone = new Set<number>();

  refreshMetadataIfNecessary = () => Promise.resolve();

  findGroupCoordinator = ({ groupId, coordinatorType }: { groupId: string; coordinatorType: number }) => {
    this.lookups.push({ type: coordinatorType, id: groupId });
    return Promise.resolve(this.brokers.get(this.coordinator.get(coordinatorType)!)!);
  };

  findBroker = ({ nodeId }: { nodeId: number }) =>
    this.gone.has(nodeId)
      ? Promise.reject(
          Object.assign(new Error(`Broker ${nodeId} not found`), { name: 'KafkaJSBrokerNotFound' }),
        )
      : Promise.resolve(this.brokers.get(nodeId)!);

  lookupsOf = (type: number) => this.lookups.filter((l) => l.type === type).length;
  broker = (id: number) => this.brokers.get(id)!;
}

const topics = [{ topic: 'out', partitions: [{ partition: 0 }] }];
const offsets = {
  consumerGroupId: GROUP,
  topics: [{ topic: 'in', partitions: [{ partition: 0, offset: '10' }] }],
};

async function setUp(factory: EosManagerFactory) {
  const cluster = new ClusterDouble();
  const eos = factory({ logger: quiet, cluster, transactional: true, transactionalId: TRANSACTIONAL_ID });
  await eos.initProducerId();
  return { cluster, eos };
}

/** One transaction as the worker's committer makes it: outputs, the consumed offsets, commit. */
async function oneTransaction(eos: EosManager) {
  eos.beginTransaction();
  await eos.addPartitionsToTransaction(topics);
  await eos.sendOffsets(offsets);
  await eos.commit();
}

describe('kafkajs transactions find their coordinators once (patches/kafkajs+2.2.4.patch)', () => {
  it('kafkajs as published looks both coordinators up before every request: four lookups a transaction', async () => {
    const { cluster, eos } = await setUp(published);
    for (let i = 0; i < 5; i++) await oneTransaction(eos);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.TRANSACTION)).toBe(1 + 5 * 3);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.GROUP)).toBe(5);
  });

  it('the installed kafkajs looks each coordinator up once over five transactions, and sends them the same requests', async () => {
    const { cluster, eos } = await setUp(installed);
    for (let i = 0; i < 5; i++) await oneTransaction(eos);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.TRANSACTION)).toBe(1);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.GROUP)).toBe(1);
    const once = ['AddPartitionsToTxn', 'AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn'];
    expect(cluster.broker(1).requests).toEqual(['InitProducerId', ...Array(5).fill(once).flat()]);
    expect(
      cluster.lookups.every((l) => l.id === (l.type === COORDINATOR_TYPES.GROUP ? GROUP : TRANSACTIONAL_ID)),
    ).toBe(true);
  });

  it('a transaction coordinator that moved answers NOT_COORDINATOR once; the retry looks it up and every later request goes to the new one', async () => {
    const { cluster, eos } = await setUp(installed);
    await oneTransaction(eos);
    cluster.coordinator.set(COORDINATOR_TYPES.TRANSACTION, 2);
    cluster.broker(1).failNext.set('AddPartitionsToTxn', () => protocolError('NOT_COORDINATOR'));

    eos.beginTransaction();
    await expect(eos.addPartitionsToTransaction(topics)).rejects.toMatchObject({ type: 'NOT_COORDINATOR' });
    await eos.addPartitionsToTransaction(topics);
    await eos.sendOffsets(offsets);
    await eos.commit();
    await oneTransaction(eos);

    expect(cluster.lookupsOf(COORDINATOR_TYPES.TRANSACTION)).toBe(2);
    expect(cluster.broker(2).requests).toEqual([
      'AddPartitionsToTxn',
      'AddOffsetsToTxn',
      'EndTxn',
      'AddPartitionsToTxn',
      'AddOffsetsToTxn',
      'EndTxn',
    ]);
  });

  it('a group coordinator that moved is looked up again inside the same offset commit, and kept', async () => {
    const { cluster, eos } = await setUp(installed);
    await oneTransaction(eos);
    cluster.coordinator.set(COORDINATOR_TYPES.GROUP, 2);
    cluster.broker(1).failNext.set('TxnOffsetCommit', () => protocolError('NOT_COORDINATOR'));

    await oneTransaction(eos);
    await oneTransaction(eos);

    expect(cluster.lookupsOf(COORDINATOR_TYPES.GROUP)).toBe(2);
    expect(cluster.broker(2).requests).toEqual(['TxnOffsetCommit', 'TxnOffsetCommit']);
    expect(cluster.broker(1).requests.filter((r) => r === 'TxnOffsetCommit')).toHaveLength(2);
  });

  it.each([
    {
      when: 'a closed connection makes the retry look its coordinator up again',
      failure: connectionClosed,
      lookups: 2,
    },
    {
      when: 'CONCURRENT_TRANSACTIONS, the coordinator answering while it finishes the last transaction, keeps it: the retry asks no one else',
      failure: () => protocolError('CONCURRENT_TRANSACTIONS'),
      lookups: 1,
    },
  ])('$when', async ({ failure, lookups }) => {
    const { cluster, eos } = await setUp(installed);
    await oneTransaction(eos);
    cluster.broker(1).failNext.set('AddPartitionsToTxn', failure);

    eos.beginTransaction();
    await expect(eos.addPartitionsToTransaction(topics)).rejects.toMatchObject({
      name: failure().name,
    });
    await eos.addPartitionsToTransaction(topics);
    await eos.sendOffsets(offsets);
    await eos.commit();

    expect(cluster.lookupsOf(COORDINATOR_TYPES.TRANSACTION)).toBe(lookups);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.GROUP)).toBe(1);
    expect(cluster.broker(1).requests.slice(-5)).toEqual([
      'AddPartitionsToTxn',
      'AddPartitionsToTxn',
      'AddOffsetsToTxn',
      'TxnOffsetCommit',
      'EndTxn',
    ]);
  });

  it('a kept coordinator whose broker left the cluster is looked up again before any request goes out', async () => {
    const { cluster, eos } = await setUp(installed);
    await oneTransaction(eos);
    const before = cluster.broker(1).requests.length;
    cluster.gone.add(1);
    cluster.coordinator.set(COORDINATOR_TYPES.TRANSACTION, 2);
    cluster.coordinator.set(COORDINATOR_TYPES.GROUP, 2);

    await oneTransaction(eos);

    expect(cluster.broker(1).requests).toHaveLength(before);
    expect(cluster.broker(2).requests).toEqual([
      'AddPartitionsToTxn',
      'AddOffsetsToTxn',
      'TxnOffsetCommit',
      'EndTxn',
    ]);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.TRANSACTION)).toBe(2);
    expect(cluster.lookupsOf(COORDINATOR_TYPES.GROUP)).toBe(2);
  });
});
