/**
 * An upstream producer for the aborted-transactions scenario: it opens a transaction,
 * sends a few records, says "sent" and waits, never committing, until it is killed.
 */
import { Kafka, logLevel } from 'kafkajs';

const [brokers, transactionalId, topic] = process.argv.slice(2) as [string, string, string];
const kafka = new Kafka({ clientId: 'zombie', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
const tx = await producer.transaction();
await tx.send({
  topic,
  messages: Array.from({ length: 20 }, (_, i) => ({
    key: 'c-zombie',
    value: JSON.stringify({
      id: `zombie-${i}`,
      clientId: 'c-zombie',
      type: 'event',
      ts: '2026-11-30T12:00:00.000Z',
      name: 'signup',
      data: {},
    }),
  })),
});
process.stdout.write('sent\n');
await new Promise(() => undefined);
