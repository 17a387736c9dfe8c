import { Command } from 'commander';
import { ConfigError } from '../config/config.js';
import { loadKafkaSecurity } from '../config/security.js';
import { ProduceError, type ProduceResult } from '../generator/produce.js';
import { describeWorkload, type WorkloadShape } from '../generator/workload.js';

import {
  OptionError,
  type ProduceCommandDeps,
  type ProduceSettings,
  parseProduceOptions,
  type RawProduceOptions,
} from './produce/options.js';
import { produce } from './produce/run.js';

export * from './produce/options.js';

const USAGE_ERRORS = new Set([
  'commander.unknownOption',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.conflictingOption',
  'commander.excessArguments',
  'commander.invalidArgument',
  'commander.unknownCommand',
]);

const HELP_AFTER = `
Messages follow the ingestion contract (key = clientId, value = JSON with id, clientId,
type, version|name, ts, data). Shares are of all records sent: --duplicate-share re-sends an
earlier message with the same id and bytes 10 ms to 5 s later (a producer retry), and
--poison-share sends poison of every kind in rotation: invalid JSON, a missing field, a
wrong-typed field, oversize (over --max-message-bytes), and a null value. The rest are
profile updates (--profile-share of them, with per-client versions 1, 2, 3, …) and events;
--hostile-key-share of those also carry a __proto__, constructor or prototype key inside
data (top level or nested), which the contract makes an ordinary, valid field.

The same options and --seed produce the same bytes, message ids included: a second run with
the same seed is a pure replay (every message a duplicate). Pass another --seed for new data.

Oversize poison needs a topic that accepts records over --max-message-bytes: --create-topic
sets the topic's max.message.bytes accordingly; on an existing topic whose limit is too
small, oversize poison is left out (with a warning).

Push-back: with --redis-url (or REDIS_URL) the producer honours the rate limit the workers
publish for the topic when their consumer group falls behind (it then falls behind its own
plan, and says so), and spreads the clients the workers mark hot over several partitions.
With Redis unreachable it sends as without push-back. --ignore-limits turns it off.

Progress goes to stderr once a second (not with --quiet); the final summary goes to stdout,
as one JSON object with --json. SIGINT/SIGTERM stop early and still print the summary.
Exit codes: 0 done, 1 Kafka failure, 2 invalid option.

A secured Kafka takes the worker's variables: KAFKA_SSL, KAFKA_SSL_CA, KAFKA_SSL_CERT,
KAFKA_SSL_KEY, KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD (or a
<NAME>_FILE variant for the secrets).

Examples:
  rxingest produce --create-topic 8 --rate 2000 --duration 30
  rxingest produce --topic ingest.events --count 50000 --hot-clients 3 --hot-share 0.5 --seed 7
  rxingest produce --count 1000 --poison-share 0.1 --shuffle-versions --json
`;

const formatSummary = (s: ProduceSettings, r: ProduceResult): string => {
  const seconds = (r.elapsedMs / 1000).toFixed(2);
  const kinds = `${r.sent.event} events, ${r.sent.profile} profiles, ${r.sent.duplicate} duplicates, ${r.sent.poison} poison`;
  const extra = [
    r.rejected > 0 ? `${r.rejected} refused by the broker as too large` : '',
    r.aborted ? 'stopped early' : '',
  ].filter(Boolean);
  return (
    `produced ${r.total} records to ${s.topic} in ${seconds} s (${Math.round(r.ratePerSec)} msg/s): ${kinds}` +
    (extra.length > 0 ? ` (${extra.join('; ')})` : '')
  );
};

/** `rxingest produce`: sends a seeded, paced workload of contract messages to a Kafka topic. */
export function produceCommand(deps: ProduceCommandDeps = {}): Command {
  const cmd = new Command('produce');
  cmd
    .description(
      'send a deterministic, paced workload of ingestion messages (with duplicates and poison) to Kafka',
    )
    .option(
      '--brokers <list>',
      'Kafka brokers, host:port[,host:port…] (default: $KAFKA_BROKERS or localhost:9092)',
    )
    .option('--topic <name>', 'topic to send to (default: first of $INGEST_TOPICS or ingest.events)')
    .option('--rate <msgs>', 'messages per second (default: 1000)')
    .option('--duration <seconds>', 'how long to send (default: 10; not with --count)')
    .option('--count <n>', 'send exactly n messages (at --rate) instead of --duration')
    .option('--clients <n>', 'number of clients, ids c-0001… (default: 100)')
    .option('--profile-share <share>', 'share of original messages that are profile updates (default: 0.3)')
    .option('--duplicate-share <share>', 'share of records that re-send an earlier message (default: 0.02)')
    .option('--poison-share <share>', 'share of records that are poison (default: 0.01)')
    .option(
      '--hostile-key-share <share>',
      'share of valid messages whose data also has a __proto__/constructor/prototype key (default: 0.01)',
    )
    .option(
      '--hot-clients <n>',
      'skew: this many hot clients get --hot-share of the traffic (default: off; 3)',
    )
    .option('--hot-share <share>', 'skew: share of the traffic for the hot clients (default: off; 0.5)')
    .option('--seed <n>', 'PRNG seed, 0 to 4294967295: same seed, same bytes (default: 1)')
    .option('--create-topic <partitions>', 'create the topic with this many partitions if it is missing')
    .option(
      '--max-message-bytes <bytes>',
      'size oversize poison goes over (default: $MAX_MESSAGE_BYTES or 1048576)',
    )
    .option(
      '--shuffle-versions [share]',
      'send this share of clients’ profile updates out of version order (bare: 0.5; default: off)',
    )
    .option('--event-names <list>', 'comma-separated event names (default: signup,purchase,login,logout)')
    .option(
      '--redis-url <url>',
      'honour producer limits and hot clients the workers publish there (default: $REDIS_URL; none: off)',
    )
    .option(
      '--control-key-prefix <prefix>',
      'the workers’ CONTROL_KEY_PREFIX (default: $CONTROL_KEY_PREFIX or rxingest:control:)',
    )
    .option('--ignore-limits', 'do not read producer limits or hot clients, even with REDIS_URL set')
    .option('--json', 'print the final summary as one JSON object')
    .option('--quiet', 'no progress lines on stderr')
    .addHelpText('after', HELP_AFTER)
    .exitOverride((err) => {
      // Usage errors exit 2 like invalid values; help/version exit 0; anything else keeps its code.
      process.exit(err.exitCode !== 0 && USAGE_ERRORS.has(err.code) ? 2 : err.exitCode);
    })
    .action(async (raw: RawProduceOptions) => {
      const env = deps.env ?? process.env;
      const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
      const err = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));

      let settings: ProduceSettings;
      let shape: WorkloadShape;
      try {
        settings = { ...parseProduceOptions(raw, env), security: loadKafkaSecurity(env) };
        shape = describeWorkload(settings.workload);
      } catch (e) {
        if (e instanceof OptionError || e instanceof RangeError || e instanceof ConfigError) {
          return cmd.error(`error: ${e.message}`, { exitCode: 2, code: 'rxingest.invalidOption' });
        }
        throw e;
      }

      try {
        const result = await produce(settings, shape, deps, err);
        if (settings.json) {
          out(
            JSON.stringify({
              topic: settings.topic,
              brokers: settings.brokers,
              seed: settings.workload.seed,
              planned: {
                total: shape.total,
                originals: shape.originals,
                duplicates: shape.duplicates,
                poison: shape.poison,
                durationMs: shape.durationMs,
              },
              ...result.summary,
              oversizeLeftOut: result.oversizeLeftOut,
              ...(result.pushback ? { pushback: result.pushback } : {}),
            }),
          );
        } else {
          out(formatSummary(settings, result.summary));
        }
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        if (e instanceof ProduceError) {
          err(formatSummary(settings, { ...e.result, aborted: true }));
        }
        return cmd.error(`error: ${message}`, { exitCode: 1, code: 'rxingest.produceFailed' });
      }
    });
  return cmd;
}
