import type { RunResources } from './stack.js';

/**
 * A benchmark worker's own deployment: its consumer group, indices and Redis key prefix
 * under this run's names (the prefix is registered for the clean-up); output topics shared.
 */
export function benchWorkerEnv(
  res: RunResources,
  key: string,
  topics: readonly string[],
): Record<string, string> {
  const prefix = `${res.runId}:${key}:`;
  res.redisPrefixes.add(prefix);
  return {
    INGEST_TOPICS: topics.join(','),
    INGEST_GROUP: res.name(`${key}-group`),
    PROFILES_INDEX: res.name(`${key}-profiles`),
    EVENTS_INDEX: res.name(`${key}-events`),
    DLQ_TOPIC: res.name('dlq'),
    TRIGGERS_TOPIC: res.name('triggers'),
    REDIS_KEY_PREFIX: prefix,
  };
}
