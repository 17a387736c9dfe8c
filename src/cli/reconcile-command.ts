import { Command } from 'commander';
import { terminalProgress } from '../tools/progress.js';
import { reconcile } from '../tools/reconcile/reconcile.js';
import { exampleCounts, formatReport } from '../tools/reconcile/report.js';
import { runTool, sinceOption, toolConfig } from './tool-env.js';

const HELP_AFTER = `
Uses the worker's environment (INGEST_TOPICS, INGEST_GROUP, DLQ_TOPIC, TRIGGERS_TOPIC,
TRIGGER_RULES, PROFILES_INDEX, EVENTS_INDEX, MAX_MESSAGE_BYTES, TOMBSTONES, KAFKA_BROKERS,
ES_NODE, …; see \`rxingest worker --help\`).

Reads the input topics from the beginning up to the group's committed offsets (what is past
them is not expected yet; the report says how much), applies the contract (dedup by id, the
per-field (version, id) merge, poison rules, TOMBSTONES, trigger rules) and compares with the
profiles and events indices, the triggers topic (read_committed) and the DLQ.

Exit status: 0 nothing missing or different, 1 something is, 2 it cannot run.`;

/** `rxingest reconcile`: says whether anything was lost or is different. */
export function reconcileCommand(): Command {
  return new Command('reconcile')
    .description(
      'prove the output: recompute the contract state from the input topics and compare with Elasticsearch, triggers and the DLQ',
    )
    .option('--json', 'print one JSON object instead of the report')
    .option('--since <iso>', 'only input messages whose Kafka timestamp is at or after this time')
    .addHelpText('after', HELP_AFTER)
    .action(async (opts: { json?: boolean; since?: string }) => {
      const since = sinceOption('reconcile', opts.since);
      const config = toolConfig('reconcile');
      await runTool('reconcile', async () => {
        const report = await reconcile(config, { since, progress: terminalProgress() });
        process.stdout.write(
          opts.json
            ? `${JSON.stringify(report, null, 2)}\n`
            : `${formatReport(report, exampleCounts(report))}\n`,
        );
        return report.ok ? 0 : 1;
      });
    });
}
