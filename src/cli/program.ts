import { Command } from 'commander';
import { demoCommand } from './demo-command.js';
import { dlqCommand } from './dlq-command.js';
import { produceCommand } from './produce-command.js';
import { reconcileCommand } from './reconcile-command.js';
import { shedCommand, unshedCommand } from './shed-command.js';
import { workerCommand } from './worker-command.js';

/** The `rxingest` command and its subcommands; the documentation's commands are checked against it. */
export function rxingestProgram(): Command {
  return new Command('rxingest')
    .description(
      'Kafka → Elasticsearch ingestion worker: one RxJS graph per partition, per-client order, dedup, ' +
        'bulk retry, triggers and in-order commits',
    )
    .addCommand(workerCommand(), { isDefault: true })
    .addCommand(produceCommand())
    .addCommand(demoCommand())
    .addCommand(shedCommand())
    .addCommand(unshedCommand())
    .addCommand(reconcileCommand())
    .addCommand(dlqCommand());
}
