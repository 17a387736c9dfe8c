/**
 * Reads a whole topic with the tools' reader, but with kafkajs 2.2.4's ORIGINAL
 * read_committed filter loaded in place of the patched one: what any kafkajs reader of this
 * project would see without patches/kafkajs+2.2.4.patch. Prints the ids read, one JSON array.
 *
 * argv: brokers topic
 */
import { createRequire, Module } from 'node:module';

const require = createRequire(import.meta.url);
const path = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
const original = new Module(path);
original.filename = path;
original.loaded = true;
original.exports = require('../../../harness/kafkajs-2.2.4/filter-aborted-messages.original.cjs');
require.cache[path] = original;

const [brokers, topic] = process.argv.slice(2) as [string, string];
const { Kafka, logLevel } = await import('kafkajs');
const { readTopics, wholeTopics } = await import('../../../src/tools/topic-reader.js');
const kafka = new Kafka({
  clientId: 'original-filter',
  brokers: brokers.split(','),
  logLevel: logLevel.NOTHING,
});
const admin = kafka.admin();
await admin.connect();
const ranges = await wholeTopics(admin, [topic]);
await admin.disconnect();
const ids: string[] = [];
await readTopics(kafka, ranges, (rs) => {
  for (const r of rs) ids.push((JSON.parse(String(r.value)) as { id: string }).id);
});
process.stdout.write(`${JSON.stringify(ids)}\n`);
