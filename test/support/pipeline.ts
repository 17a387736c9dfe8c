import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { createTopics, stackEnv, uniqueName, waitFor } from './stack.js';
import { spawnWorker } from './worker-process.js';

export const RULES = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' }];

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

export async function committedEqualsEnd(admin: Admin, topic: string, group: string): Promise<boolean> {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId: group, topics: [topic] }),
  ]);
  const c = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
  return ends.every((e) => c.get(e.partition) === e.high);
}

/** Runs the real worker until the group has committed everything in the input topic, then stops it (SIGTERM). */
export async function runWorkerUntilCaughtUp(
  admin: Admin,
  env: Record<string, string>,
  names: { topic: string; group: string },
  label: string,
) {
  const worker = spawnWorker(env, label);
  try {
    await waitFor(
      'the worker to commit the whole input',
      () => committedEqualsEnd(admin, names.topic, names.group),
      {
        timeoutMs: 120_000,
        intervalMs: 300,
      },
    );
  } finally {
    worker.child.kill('SIGTERM');
    const code = await worker.exited;
    if (code !== 0) throw new Error(`worker ${label} exited with ${code}; see ${worker.logFile}`);
  }
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `rxingest <args>` as a user runs it (through tsx, no build), with this environment. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 300_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { env: { ...process.env, ...env }, maxBuffer: 256 * 1024 * 1024, timeout: timeoutMs },
      (err, stdout, stderr) => {
        const code =
          err === null
            ? 0
            : typeof (err as { code?: unknown }).code === 'number'
              ? (err as { code: number }).code
              : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
