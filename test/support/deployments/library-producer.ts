import type { Redis } from 'ioredis';
import type { Kafka } from 'kafkajs';
import { createIngestProducer, RedisControlSource } from '../../../src/producer/index.js';

/**
 * An application on the producer library, as the README shows it: a RedisControlSource
 * (limits, hot clients) and createIngestProducer, connected; `close()` sends what is
 * buffered, leaves the topics' producer sets and disconnects.
 */
export async function libraryProducer(
  kafka: Kafka,
  redis: Redis,
  o: {
    readonly keyPrefix: string;
    readonly refreshMs?: number;
    /** Read the control keys once before the first send (the limit holds from the start). */
    readonly watch?: string;
    readonly options?: Parameters<typeof createIngestProducer>[1];
  },
) {
  const control = new RedisControlSource(redis, {
    keyPrefix: o.keyPrefix,
    ...(o.refreshMs !== undefined ? { refreshMs: o.refreshMs } : {}),
  });
  if (o.watch !== undefined) {
    control.watch(o.watch);
    await control.refresh();
  }
  const made = createIngestProducer(kafka, { control, ...o.options });
  await made.kafkaProducer.connect();
  return {
    ...made,
    control,
    close: async () => {
      await made.producer.close();
      await control.close();
      await made.kafkaProducer.disconnect();
    },
  };
}
