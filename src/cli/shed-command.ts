import { hostname, userInfo } from 'node:os';
import { Command } from 'commander';
import { type Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { ExplicitPartitionerKafka, kafkaClientConfig } from '../clients/kafka.js';
import { type Config, ConfigError, loadConfig } from '../config/config.js';
import {
  ensureControlTopic,
  publishShedDecision,
  readShedDecisions,
  type ShedDecision,
} from '../protocol/shed-channel.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface ShedCommandDeps {
  /** Default process.env (the worker's variables: KAFKA_BROKERS, INGEST_GROUP, INGEST_TOPICS, CONTROL_TOPIC). */
  readonly env?: Env;
  readonly createKafka?: (config: KafkaConfig) => Kafka;
  readonly out?: (line: string) => void;
  /** Who is recorded as deciding; default user@host. */
  readonly who?: () => string;
}

const HELP_AFTER = `
The decision is written to the compacted topic CONTROL_TOPIC (default rxingest.control)
for the consumer group INGEST_GROUP; every worker of that group pauses the topic (keeps
it in Kafka, does not consume it) within a few seconds, and a worker started later does
too. It holds until \`rxingest unshed <topic>\`. Low-priority topics (TOPIC_PRIORITIES) are
also shed automatically while Elasticsearch is failing or lag is high; unshed lifts only
the manual decision. Same environment as the worker. Exit codes: 0 done, 1 Kafka failure,
2 invalid configuration or topic.`;

const defaultWho = () => {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {}
  return `${user}@${hostname()}`;
};

/** The worker's connection (TLS, SASL: src/clients), giving up quickly as a command should. */
function kafkaConfig(config: Config): KafkaConfig {
  return kafkaClientConfig(config.kafka, {
    clientId: `${config.kafka.clientId}-shed`,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    retry: { retries: 5, initialRetryTime: 200 },
  });
}

const describe = (d: ShedDecision) =>
  `${d.topic}\tshed by ${d.by} at ${d.at}${d.reason ? ` (${d.reason})` : ''}`;

/** `rxingest shed <topic>` / `rxingest shed --list` / `rxingest unshed <topic>`. */
function decisionCommand(name: 'shed' | 'unshed', deps: ShedCommandDeps): Command {
  const cmd = new Command(name);
  cmd
    .description(
      name === 'shed'
        ? 'pause a topic on every worker of the group (kept in Kafka), until unshed; --list shows the decisions'
        : 'lift a manual shed decision: every worker of the group consumes the topic again',
    )
    .argument(name === 'shed' ? '[topic]' : '<topic>', 'an input topic (one of INGEST_TOPICS)')
    .addHelpText('after', HELP_AFTER);
  if (name === 'shed') {
    cmd
      .option('--reason <text>', 'why (recorded with the decision)')
      .option('--list', "list the group's manual shed decisions")
      .option('--json', 'with --list: one JSON object');
  }
  cmd.exitOverride((err) => {
    process.exit(err.exitCode === 0 ? 0 : 2);
  });
  cmd.action(async (topic: string | undefined, opts: { reason?: string; list?: boolean; json?: boolean }) => {
    const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
    let config: Config;
    try {
      config = loadConfig({ ...(deps.env ?? process.env) });
    } catch (err) {
      if (err instanceof ConfigError)
        return cmd.error(`rxingest: invalid configuration: ${err.message}`, { exitCode: 2 });
      throw err;
    }
    const { controlTopic } = config.control.shedding;
    const group = config.kafka.groupId;
    if (opts.list) {
      if (topic !== undefined) return cmd.error('error: --list takes no topic', { exitCode: 2 });
    } else if (topic === undefined) {
      return cmd.error('error: missing topic: expected `rxingest shed <topic>` or `rxingest shed --list`', {
        exitCode: 2,
      });
    } else if (!config.kafka.topics.includes(topic)) {
      return cmd.error(
        `error: topic ${JSON.stringify(topic)} is invalid: expected one of INGEST_TOPICS (${config.kafka.topics.join(', ')})`,
        { exitCode: 2 },
      );
    }
    const kafka = (deps.createKafka ?? ((c) => new ExplicitPartitionerKafka(c)))(kafkaConfig(config));
    const where = `${controlTopic} at ${config.kafka.brokers.join(',')}`;
    try {
      if (opts.list) {
        const decisions = [...(await readShedDecisions(kafka, controlTopic, group)).values()];
        if (opts.json) out(JSON.stringify({ group, controlTopic, shed: decisions }));
        else if (decisions.length === 0) out(`no topic is shed by hand for group ${group}`);
        else for (const d of decisions) out(describe(d));
        return;
      }
      const admin = kafka.admin();
      await admin.connect();
      let warning: string | undefined;
      try {
        warning = await ensureControlTopic(admin, controlTopic);
      } finally {
        await admin.disconnect();
      }
      if (warning) out(`warning: ${warning}`);
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        await publishShedDecision(
          producer,
          controlTopic,
          group,
          topic!,
          name === 'shed'
            ? {
                by: (deps.who ?? defaultWho)(),
                at: new Date().toISOString(),
                ...(opts.reason ? { reason: opts.reason } : {}),
              }
            : null,
        );
      } finally {
        await producer.disconnect();
      }
      out(
        name === 'shed'
          ? `shed ${topic} for group ${group}: its workers pause it within seconds (${controlTopic})`
          : `unshed ${topic} for group ${group}: its workers consume it again unless it is shed automatically`,
      );
    } catch (err) {
      return cmd.error(`error: Kafka ${where}: ${(err as Error).message}`, { exitCode: 1 });
    }
  });
  return cmd;
}

export const shedCommand = (deps: ShedCommandDeps = {}) => decisionCommand('shed', deps);
export const unshedCommand = (deps: ShedCommandDeps = {}) => decisionCommand('unshed', deps);
