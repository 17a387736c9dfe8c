import { Command } from 'commander';
import { ConfigError, loadConfig } from '../config/config.js';
import { firstSentence, securityReference, settingsReference } from '../config/reference.js';
import { createLogger } from '../log/logger.js';
import { secretScrubber, secretValues } from '../log/secrets.js';
import { setHeapGrowth } from '../pushback/memory/heap-growth.js';
import { startWorker } from '../worker/worker.js';

const groups = settingsReference();
/** Names padded to the longest, so that none runs into its default. */
const COLUMN =
  Math.max(
    ...[
      ...groups.flatMap((g) => g.settings.map((s) => s.name)),
      ...Object.keys(securityReference.variables),
    ].map((n) => n.length),
  ) + 2;
const DEFAULT_COLUMN = Math.max(...groups.flatMap((g) => g.settings.map((s) => s.default.length))) + 4;

const HELP_AFTER = `
Configuration comes from environment variables, in the groups of docs/configuration.md, which
gives each one's range and full meaning (default in brackets):
${groups
  .map(
    (g) =>
      `\n${g.title}: ${g.about}\n` +
      g.settings
        .map(
          (s) =>
            `  ${s.name.padEnd(COLUMN)}${`[${s.default}]`.padEnd(DEFAULT_COLUMN)}${firstSentence(s.meaning)}`,
        )
        .join('\n'),
  )
  .join('\n')}

${securityReference.title} (off unless set; help never shows the values you set):
${Object.entries(securityReference.variables)
  .map(([name, meaning]) => `  ${name.padEnd(COLUMN)}${meaning}`)
  .join('\n')}
  Every secret, and the user names, may come from a file: ${securityReference.fileVariables.join(', ')}.
  A password for Redis goes in REDIS_URL (rediss://:password@host:port), or REDIS_URL_FILE.

A bad value stops the start with one line naming the variable, the value and what is expected.
SIGTERM or SIGINT drains in-flight work, commits and exits 0.`;

/** `rxingest worker`: the ingestion worker, in the foreground. */
export function workerCommand(): Command {
  return new Command('worker')
    .description('consume from Kafka, index into Elasticsearch, commit in order (configured by environment)')
    .addHelpText('after', HELP_AFTER)
    .action(async () => {
      let config: ReturnType<typeof loadConfig>;
      try {
        config = loadConfig(process.env);
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`rxingest: invalid configuration: ${err.message}\n`);
          process.exit(2);
        }
        throw err;
      }
      // Process-wide, so set here at the edge, before anything allocates much.
      setHeapGrowth(config.control.heapGrowthPercent);
      const secrets = secretValues(config);
      const scrub = secretScrubber(secrets);
      const log = createLogger({ level: config.logLevel, secrets });
      // Listening before the start: a signal while it connects, waits for topics or joins the
      // group would otherwise end the process by the signal's default action, not exit 0. The
      // worker stops as soon as it has started (with nothing taken in, there is nothing to drain).
      let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
      let stopAsked = false;
      const onSignal = (signal: NodeJS.Signals) => {
        log.info({ signal, starting: worker === undefined }, 'signal received');
        stopAsked = true;
        void worker?.stop();
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      try {
        worker = await startWorker({ config, log });
      } catch (err) {
        log.fatal({ err }, 'worker could not start');
        process.stderr.write(`rxingest: could not start: ${scrub((err as Error).message)}\n`);
        process.exit(1);
      }
      worker.stopped.then(
        () => process.exit(0),
        () => process.exit(1),
      );
      if (stopAsked) void worker.stop();
    });
}
