import type { Admin, Kafka } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createRetryPolicy } from '../../../../src/retry/retry-policy.js';
import { COMMIT_RETRY_FIRST_MS } from '../../../../src/sinks/kafka/partition-takeover.js';
import type { ProgressLedger } from '../../../../src/sinks/kafka/progress-ledger.js';
import { TransactionalCommitter } from '../../../../src/sinks/kafka/transactional-committer.js';

const silent = pino({ level: 'silent' });
const retry = createRetryPolicy({ baseMs: 1, maxMs: 2 });

/** What kafkajs throws while the group coordinator moves (just after a broker restart). */
const notCoordinator = () =>
  Object.assign(new Error('This is not the correct coordinator for this group'), {
    name: 'KafkaJSProtocolError',
    type: 'NOT_COORDINATOR',
    retriable: true,
  });

function fakes(failures: number, error: () => Error = notCoordinator, offsets: readonly string[] = ['42']) {
  let calls = 0;
  const kafka = {
    producer: () => ({
      connect: async () => undefined,
      disconnect: async () => undefined,
      transaction: async () => ({ abort: async () => undefined }),
    }),
  } as unknown as Kafka;
  const admin = {
    fetchOffsets: async () => {
      calls++;
      if (calls <= failures) throw error();
      const offset = offsets[Math.min(calls - failures - 1, offsets.length - 1)]!;
      return [{ topic: 'in', partitions: [{ partition: 0, offset, metadata: 'rxingest:highest=50' }] }];
    },
  } as unknown as Admin;
  const ledger = { highestOf: async () => undefined } as unknown as ProgressLedger;
  return { kafka, admin, ledger, calls: () => calls };
}

const options = { groupId: 'g', topic: 'in', partition: 0, progressTopic: 'progress', retry };

describe('TransactionalCommitter.open', () => {
  it('asks again when the group coordinator moved, and opens at the committed offset', async () => {
    const f = fakes(3);
    const retries: string[] = [];
    const opened = await TransactionalCommitter.open(
      f.kafka,
      f.admin,
      f.ledger,
      { ...options, onRetry: (reason) => retries.push(reason) },
      silent,
    );
    // Three refused, one answer, one more to see that the offset has settled.
    expect(f.calls()).toBe(5);
    expect(retries, 'each retry told (rxingest_retries_total{target="kafka"})').toEqual([
      'offset-read',
      'offset-read',
      'offset-read',
    ]);
    expect(opened.committed).toBe('42');
    expect(opened.replayedBelow).toBe('50');
  });

  it('reads again while the committed offset still moves (a commit the coordinator has not shown yet)', async () => {
    const f = fakes(0, notCoordinator, ['30', '42', '42']);
    const opened = await TransactionalCommitter.open(f.kafka, f.admin, f.ledger, options, silent);
    expect(opened.committed).toBe('42');
    expect(f.calls()).toBe(3);
  });

  it('gives up after a few tries, so that the partition start fails and is restarted later', async () => {
    const f = fakes(100);
    await expect(TransactionalCommitter.open(f.kafka, f.admin, f.ledger, options, silent)).rejects.toThrow(
      /not the correct coordinator/,
    );
    expect(f.calls()).toBe(7);
  });

  it('does not retry an error that is not transient', async () => {
    const f = fakes(100, () =>
      Object.assign(new Error('not authorized'), {
        name: 'KafkaJSProtocolError',
        type: 'GROUP_AUTHORIZATION_FAILED',
        retriable: false,
      }),
    );
    await expect(TransactionalCommitter.open(f.kafka, f.admin, f.ledger, options, silent)).rejects.toThrow(
      /not authorized/,
    );
    expect(f.calls()).toBe(1);
  });

  it('gives its producer a short first retry, so that a commit right after the last one is not held 300 ms', async () => {
    // CONCURRENT_TRANSACTIONS answers a transaction begun before the last one's markers are
    // written; kafkajs asks again after initialRetryTime (300 ms unless set). The effect on
    // the real broker is measured by `npm run bench -- --only commits`.
    const f = fakes(0);
    const configs: { retry?: { initialRetryTime?: number; retries?: number } }[] = [];
    const producer = f.kafka.producer;
    const kafka = {
      producer: (cfg: (typeof configs)[number]) => {
        configs.push(cfg);
        return producer.call(f.kafka, cfg as never);
      },
    } as unknown as Kafka;
    await TransactionalCommitter.open(kafka, f.admin, f.ledger, options, silent);
    await TransactionalCommitter.open(kafka, f.admin, f.ledger, { ...options, retryFirstMs: 50 }, silent);
    expect(COMMIT_RETRY_FIRST_MS).toBeLessThanOrEqual(20);
    expect(configs.map((c) => c.retry?.initialRetryTime)).toEqual([COMMIT_RETRY_FIRST_MS, 50]);
    expect(configs[0]?.retry?.retries, 'idempotence still retries without end').toBe(Number.MAX_SAFE_INTEGER);
  });
});
