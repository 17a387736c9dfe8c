/**
 * The contract's metrics ("Operating it") and their labels: what every scrape
 * must show. Shared by the unit tests of the registry, the dashboard checks and
 * the integration test that scrapes a running worker.
 */
export const CONTRACT_METRICS: Readonly<Record<string, readonly string[]>> = {
  rxingest_records_in_total: [],
  rxingest_records_done_total: ['outcome'],
  rxingest_dead_letters_total: ['class'],
  rxingest_triggers_total: [],
  rxingest_commits_total: [],
  rxingest_consumer_lag: ['topic', 'partition'],
  rxingest_in_flight: ['topic', 'partition'],
  rxingest_partition_paused: ['topic', 'partition', 'reason'],
  rxingest_e2e_latency_seconds: [],
  rxingest_es_request_duration_seconds: ['op'],
  rxingest_es_concurrency_limit: [],
  rxingest_retries_total: ['target', 'reason'],
  rxingest_breaker_state: ['target'],
  rxingest_topic_shed: ['topic'],
  rxingest_redis_up: [],
  rxingest_es_pool_utilization: [],
  rxingest_hot_clients: [],
};
