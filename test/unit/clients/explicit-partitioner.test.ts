import { Kafka, type LogEntry, logLevel, Partitioners } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKafka } from '../../../src/clients/kafka.js';

/** kafkajs's own log entries of one client, kept. */
function recorded() {
  const entries: LogEntry[] = [];
  return {
    entries,
    options: { logLevel: logLevel.DEBUG, logCreator: () => (e: LogEntry) => entries.push(e) },
  };
}

const MIGRATION_NOTICE = /switched default partitioner/;

afterEach(() => vi.restoreAllMocks());

describe("rxingest's kafkajs clients choose the partitioner", () => {
  // kafkajs writes its notice once per process: the client of ours comes first, then a plain
  // one shows that the notice would be caught here.
  it("make producers with kafkajs's default partitioner, saying so, so kafkajs has nothing to warn about", () => {
    const chosen = vi.spyOn(Partitioners, 'DefaultPartitioner');
    const ours = recorded();
    createKafka({ brokers: ['127.0.0.1:1'] }, ours.options).producer({ idempotent: true });
    expect(chosen).toHaveBeenCalledTimes(1);
    expect(ours.entries.filter((e) => MIGRATION_NOTICE.test(e.log.message))).toEqual([]);

    const plain = recorded();
    new Kafka({ brokers: ['127.0.0.1:1'], ...plain.options }).producer();
    expect(plain.entries.filter((e) => MIGRATION_NOTICE.test(e.log.message))).toHaveLength(1);
  });

  it("keep a partitioner the caller chose (the producer library's hot-client one)", () => {
    const chosen = vi.spyOn(Partitioners, 'DefaultPartitioner');
    const own = vi.fn(() => () => 0);
    createKafka({ brokers: ['127.0.0.1:1'] }, recorded().options).producer({ createPartitioner: own });
    expect(own).toHaveBeenCalledTimes(1);
    expect(chosen).not.toHaveBeenCalled();
  });
});
