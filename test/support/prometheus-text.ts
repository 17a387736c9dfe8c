import type { ParsedText, Sample } from '../../scripts/dashboard/prometheus-text.js';

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

export type { ParsedText } from '../../scripts/dashboard/prometheus-text.js';
export { parsePrometheusText } from '../../scripts/dashboard/prometheus-text.js';

/** The value of the one sample with this name whose labels include `labels`; undefined if none. */
export function sampleValue(
  text: ParsedText,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples(text, name, labels);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

export function samples(text: ParsedText, name: string, labels: Record<string, string> = {}): Sample[] {
  return text.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** Sum of the matching samples' values (0 when none). */
export const sumOf = (text: ParsedText, name: string, labels: Record<string, string> = {}): number =>
  samples(text, name, labels).reduce((a, s) => a + s.value, 0);
