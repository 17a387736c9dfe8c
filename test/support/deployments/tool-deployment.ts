import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { createTopics, kafkaClient, stackEnv, uniqueName, waitFor } from '../../../harness/stack.js';
import { spawnWorker } from '../../../harness/worker/process.js';
import { readTopics } from '../../../src/tools/topic-reader.js';

export const RULES = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' }];

/** A valid signup event (RULES fire on it), `pad` characters of note making it as large as a test needs. */
export const signupEvent = (id: string, clientId: string, pad = 0): string =>
  JSON.stringify({
    id,
    clientId,
    type: 'event',
    name: 'signup',
    ts: '2026-11-30T12:00:00.000Z',
    data: { note: 'x'.repeat(pad) },
  });

/** An isolated deployment: its own topics, group, indices, Redis prefix, and the worker's environment. */
export async function pipeline(
  prefix: string,
  { partitions = 4, dlqMaxBytes = 4 * 1024 * 1024, extraEnv = {} } = {},
) {
  const name = uniqueName(prefix);
  const names = {
    topic: `${name}.in`,
    dlq: `${name}.dlq`,
    triggers: `${name}.triggers`,
    group: `${name}-group`,
    profiles: `${name}-profiles`,
    events: `${name}-events`,
  };
  await createTopics([
    {
      topic: names.topic,
      numPartitions: partitions,
      configEntries: [{ name: 'max.message.bytes', value: '4194304' }],
    },
    {
      topic: names.dlq,
      numPartitions: 2,
      configEntries: [{ name: 'max.message.bytes', value: String(dlqMaxBytes) }],
    },
    { topic: names.triggers, numPartitions: 2 },
  ] as never);
  const rulesFile = join(tmpdir(), `${name}-rules.json`);
  writeFileSync(rulesFile, JSON.stringify(RULES));
  const env: Record<string, string> = {
    INGEST_TOPICS: names.topic,
    INGEST_GROUP: names.group,
    DLQ_TOPIC: names.dlq,
    TRIGGERS_TOPIC: names.triggers,
    PROFILES_INDEX: names.profiles,
    EVENTS_INDEX: names.events,
    TRIGGER_RULES: rulesFile,
    KAFKA_BROKERS: stackEnv.kafkaBrokers,
    ES_NODE: stackEnv.esNode,
    REDIS_URL: stackEnv.redisUrl,
    REDIS_KEY_PREFIX: `${name}:`,
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    COMMIT_INTERVAL_MS: '200',
    ...extraEnv,
  };
  return { name, names, env };
}

/**
 * True when the group has committed every record of the topic: nothing but transaction
 * markers or aborted records lies between its committed offsets and the ends (read_committed).
 * (A worker that commits past markers reaches the end exactly; one that does not stops just
 * before a trailing marker: both are caught up.)
 */
export async function caughtUp(admin: Admin, kafka: Kafka, topic: string, group: string): Promise<boolean> {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId: group, topics: [topic] }),
  ]);
  const c = new Map(committed[0]!.partitions.map((p) => [p.partition, BigInt(p.offset)]));
  const behind = ends
    .map((e) => ({ partition: e.partition, from: c.get(e.partition) ?? -1n, to: BigInt(e.high) }))
    .filter((p) => p.from < p.to);
  if (behind.some((p) => p.from < 0n)) return false;
  if (behind.length === 0) return true;
  let records = 0;
  await readTopics(kafka, [{ topic, partitions: behind }], (rs) => {
    records += rs.length;
  });
  return records === 0;
}

/**
 * Runs the real worker until the group has committed everything in the input topic, then
 * stops it (SIGTERM). Returns the worker's log file.
 */
export async function runWorkerUntilCaughtUp(
  admin: Admin,
  env: Record<string, string>,
  names: { topic: string; group: string },
  label: string,
): Promise<string> {
  const worker = spawnWorker(env, label);
  const kafka = kafkaClient(`${label}-probe`);
  let failure: unknown;
  try {
    // Until its signal handlers are in place a SIGTERM would kill it: wait for it to start.
    await waitFor(
      'the worker to start',
      () =>
        existsSync(worker.logFile) && readFileSync(worker.logFile, 'utf8').includes('"msg":"worker started"'),
      { timeoutMs: 60_000 },
    );
    await waitFor(
      'the worker to commit the whole input',
      () => caughtUp(admin, kafka, names.topic, names.group),
      {
        timeoutMs: 120_000,
        intervalMs: 500,
      },
    );
  } catch (err) {
    failure = err;
  }
  worker.child.kill('SIGTERM');
  const code = await worker.exited;
  if (failure !== undefined) throw failure;
  if (code !== 0) throw new Error(`worker ${label} exited with ${code}; see ${worker.logFile}`);
  return worker.logFile;
}
