/**
 * The client factories and start-up checks: every Kafka, Elasticsearch and Redis client
 * of rxingest is built here from the configuration (TLS, SASL, API key, CA), so a secured
 * cluster needs only the contract's variables.
 */

export type { ElasticsearchCheckSettings, ElasticsearchConnection } from './elasticsearch.js';
export { checkElasticsearch, createElasticsearch, elasticsearchClientOptions } from './elasticsearch.js';
export type { KafkaCheckSettings, KafkaConnection } from './kafka.js';
export { checkKafka, createKafka, kafkaClientConfig, kafkaMisconfiguration } from './kafka.js';
export type { RedisConnection, RedisProbe } from './redis.js';
export {
  createRedis,
  describeRedisFailure,
  probeRedis,
  redisClientOptions,
  redisMisconfiguration,
} from './redis.js';
export { StartupCheckError } from './startup-check-error.js';
