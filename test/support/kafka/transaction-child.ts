/**
 * A producer process to SIGKILL inside a transaction: it begins a transaction with the given
 * transactional id, sends the given records (awaiting the broker's acks, so they are in the
 * log), prints "sent", and waits to be killed. Its open transaction is aborted only when a
 * successor with the same transactional id fences it.
 *
 * argv: brokers transactionalId topic recordsJson ([{ partition, id }])
 */
import { Kafka, logLevel } from 'kafkajs';

const [brokers, transactionalId, topic, recordsJson] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];
const records = JSON.parse(recordsJson) as { partition: number; id: string }[];
const kafka = new Kafka({ clientId: 'txn-child', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
const producer = kafka.producer({
  transactionalId,
  idempotent: true,
  maxInFlightRequests: 1,
  transactionTimeout: 120_000,
});
await producer.connect();
const txn = await producer.transaction();
for (const r of records) {
  await txn.send({
    topic,
    messages: [{ partition: r.partition, key: r.id, value: JSON.stringify({ id: r.id }) }],
  });
}
process.stdout.write('sent\n');
setInterval(() => undefined, 60_000);
