/**
 * rxingest's producer library, for applications that send ingestion messages:
 *
 * ```ts
 * import { Kafka } from 'kafkajs';
 * import { Redis } from 'ioredis';
 * import { createIngestProducer, RedisControlSource } from 'rxingest/producer';
 *
 * const control = new RedisControlSource(new Redis(process.env.REDIS_URL));
 * const { producer, kafkaProducer } = createIngestProducer(new Kafka({ brokers }), { control });
 * await kafkaProducer.connect();
 * await producer.send({ topic: 'ingest.events', messages: [{ key: clientId, value: JSON.stringify(msg) }] });
 * ```
 *
 * It honours the rate limit rxingest's workers publish for a topic whose consumer group
 * falls behind, buffers (bounded) what it cannot send yet, and spreads hot clients over
 * several partitions. Without a control source it is a plain ordered kafkajs producer.
 */
import type { Kafka, Producer, ProducerConfig } from 'kafkajs';
import { hotClientPartitioner } from './hot-client-partitioner.js';
import { IngestProducer, type IngestProducerOptions } from './ingest-producer.js';

export { type HotClients, hotClientPartitioner } from './hot-client-partitioner.js';
export {
  BufferFullError,
  IngestProducer,
  type IngestProducerOptions,
  type IngestProducerStats,
  type ProducerClock,
} from './ingest-producer.js';
export {
  type ProducerControl,
  RedisControlSource,
  type RedisControlSourceOptions,
} from './redis-control-source.js';
export { TokenBucket } from './token-bucket.js';

/**
 * A kafkajs producer set up for ingestion (idempotent, one request in flight so that
 * per-key order holds across retries, the hot-client partitioner) and the IngestProducer
 * around it. Connect and disconnect `kafkaProducer` yourself; `producer.close()` first
 * sends what is buffered.
 */
export function createIngestProducer(
  kafka: Pick<Kafka, 'producer'>,
  options: IngestProducerOptions & { readonly producerConfig?: ProducerConfig } = {},
): { producer: IngestProducer; kafkaProducer: Producer } {
  const { producerConfig, ...rest } = options;
  const control = rest.control;
  const kafkaProducer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    ...producerConfig,
    createPartitioner: hotClientPartitioner((topic) => control?.hotClients(topic)),
  });
  return { producer: new IngestProducer(kafkaProducer, rest), kafkaProducer };
}
