/** The naive consumer (kafkajs eachMessage, one request per message) draining the backlog. */
import type { IngestMessage } from '../../src/model/message.js';
import { createIndices, deleteIndices, sampleCpu } from '../lib/ceiling.js';
import { esClient, sleep } from '../lib/stack.js';
import { cpuBetween } from '../lib/worker.js';
import type { Ctx, NaiveResult } from './types.js';

export async function runNaive(ctx: Ctx, topic: string, durationMs: number): Promise<NaiveResult> {
  const names = await createIndices(ctx, 'naive');
  const es = esClient();
  const consumer = ctx.kafka.consumer({ groupId: ctx.res.name('naive') });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let count = 0;
  let first: number | undefined;
  const series: { t: number; done: number }[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => {
      const m = JSON.parse(message.value!.toString('utf8')) as IngestMessage;
      if (m.type === 'event') {
        try {
          await es.create({
            index: names.events,
            id: m.id,
            document: { clientId: m.clientId, name: m.name, ts: m.ts, data: m.data },
          });
        } catch (err) {
          if ((err as { meta?: { statusCode?: number } }).meta?.statusCode !== 409) throw err;
        }
      } else {
        await es.index({
          index: names.profiles,
          id: m.clientId,
          document: { clientId: m.clientId, version: m.version, data: m.data },
        });
      }
      first ??= performance.now();
      count++;
      if (count % 50 === 0) series.push({ t: performance.now() - first, done: count });
    },
  });
  while (first === undefined) await sleep(50);
  const before = await sampleCpu(ctx);
  await sleep(durationMs);
  const after = await sampleCpu(ctx);
  const n = count;
  const ms = performance.now() - first;
  await consumer.disconnect();
  await es.close();
  await deleteIndices([names.events, names.profiles]);
  return { count: n, ms, rate: (n * 1000) / ms, series, cpu: cpuBetween(before, after, ctx.cores) };
}
