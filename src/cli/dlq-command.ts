import { Command } from 'commander';
import type { Config } from '../config/config.js';
import { asCannotRun, CannotRun, kafkaFor } from '../tools/clients.js';
import {
  countByClass,
  type DeadLetter,
  formatAge,
  formatBytes,
  hexPreview,
} from '../tools/dlq/dead-letter.js';
import { readLedger } from '../tools/dlq/ledger.js';
import { readDeadLetters, readOne } from '../tools/dlq/read.js';
import { type ReplayResult, replayDeadLetters } from '../tools/dlq/replay.js';
import { runTool, sinceOption, toolConfig } from './tool-env.js';

const HELP_AFTER = `
Uses the worker's environment (DLQ_TOPIC, KAFKA_BROKERS, MAX_MESSAGE_BYTES, TOMBSTONES, …).
The DLQ is read read_committed. Exit status: 0 done, 2 cannot run.`;

const SHOW_CHARS = 4_000;

const oneLine = (s: string, max = 70) => {
  const t = s.replace(/[\r\n\t]+/g, ' ');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};
const src = (d: DeadLetter) =>
  d.source ? `${d.source.topic}/${d.source.partition}/${d.source.offset}` : '(no source)';

/** `rxingest dlq list | show | replay`. */
export function dlqCommand(): Command {
  const dlq = new Command('dlq')
    .description('list, show and replay dead letters')
    .addHelpText('after', HELP_AFTER);

  dlq
    .command('list')
    .description(
      'one line per dead letter (partition:offset, class, message, source, size, age) and a count by class',
    )
    .option('--class <class>', 'only this class (invalid-json, schema, too-large, rejected, tombstone)')
    .option('--since <iso>', 'only dead letters written at or after this time')
    .option('--json', 'print one JSON object')
    .action(async (opts: { class?: string; since?: string; json?: boolean }) => {
      const since = sinceOption('dlq list', opts.since);
      const config = toolConfig('dlq list');
      await runTool('dlq list', () =>
        withKafka(config, async (kafka) => {
          const list = await readDeadLetters(kafka, config, { cls: opts.class, since });
          const byClass = countByClass(list);
          const now = Date.now();
          if (opts.json) {
            const deadLetters = list.map((d) => ({
              partition: d.partition,
              offset: d.offset,
              class: d.cls,
              message: d.message,
              source: d.source ?? null,
              size: d.originalSize ?? null,
              truncated: d.truncated,
              timestamp: new Date(d.timestamp).toISOString(),
              ageSeconds: Math.round((now - d.timestamp) / 1000),
              deadLetterCount: d.deadLetterCount,
              replayOf: d.replayOf ?? null,
            }));
            process.stdout.write(
              `${JSON.stringify({ topic: config.kafka.dlqTopic, total: list.length, byClass, deadLetters }, null, 2)}\n`,
            );
            return 0;
          }
          for (const d of list) {
            const attempts = d.deadLetterCount > 1 ? `  attempt ${d.deadLetterCount}` : '';
            process.stdout.write(
              `${`${d.partition}:${d.offset}`.padEnd(9)} ${d.cls.padEnd(12)} ${oneLine(d.message).padEnd(70)}  ← ${src(d)}  ` +
                `${formatBytes(d.originalSize)}${d.truncated ? ' (truncated)' : ''}  ${formatAge(now - d.timestamp)} ago${attempts}\n`,
            );
          }
          const classes = Object.entries(byClass)
            .sort()
            .map(([c, n]) => `${c} ${n}`)
            .join(', ');
          process.stdout.write(
            `${list.length} dead letter${list.length === 1 ? '' : 's'} in ${config.kafka.dlqTopic}${classes ? `: ${classes}` : ''}\n`,
          );
          return 0;
        }),
      );
    });

  dlq
    .command('show')
    .description(
      'the headers and the value of one dead letter (pretty JSON when it parses, a hex preview when not)',
    )
    .argument('<partition:offset>', 'where it is in the DLQ, as `dlq list` prints it')
    .option('--full', 'print the whole value (by default the first 4,000 characters)')
    .action(async (where: string, opts: { full?: boolean }) => {
      const m = /^(\d+):(\d+)$/.exec(where);
      if (!m) {
        process.stderr.write(
          `rxingest dlq show: "${where}" is invalid: expected <partition>:<offset>, e.g. 0:42\n`,
        );
        process.exit(2);
      }
      const config = toolConfig('dlq show');
      await runTool('dlq show', () =>
        withKafka(config, async (kafka) => {
          const one = await readOne(kafka, config.kafka.dlqTopic, Number(m[1]), BigInt(m[2]!));
          if ('gone' in one) {
            process.stderr.write(`rxingest dlq show: no dead letter at ${where}: ${one.gone}\n`);
            return 1;
          }
          const r = one.record;
          const ledger = await readLedger(kafka, config.kafka.dlqTopic);
          const replay = ledger.byDeadLetter.get(`${config.kafka.dlqTopic}/${r.partition}/${r.offset}`);
          const out: string[] = [
            `dead letter ${config.kafka.dlqTopic} ${r.partition}:${r.offset}, written ${new Date(r.timestamp).toISOString()} (${formatAge(Date.now() - r.timestamp)} ago)`,
            `key: ${r.key === null ? 'null' : JSON.stringify(r.key.toString('utf8'))}`,
            'headers:',
            ...Object.entries(r.headers).map(([k, v]) => `  ${k}: ${String(v)}`),
            `replayed: ${replay ? `yes, ${replay.at}, to ${replay.to} (replay ${replay.replayCount})` : 'no'}`,
          ];
          if (r.value === null) out.push('value: null (a tombstone)');
          else {
            let pretty: string | undefined;
            try {
              pretty = JSON.stringify(
                JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(r.value)),
                null,
                2,
              );
            } catch {}
            out.push(`value (${formatBytes(r.value.length)}${pretty ? ', JSON' : ', not JSON: hex'}):`);
            if (pretty === undefined) out.push(hexPreview(r.value, opts.full ? r.value.length : 256));
            else if (opts.full || pretty.length <= SHOW_CHARS) out.push(pretty);
            else
              out.push(
                `${pretty.slice(0, SHOW_CHARS)}\n… ${pretty.length - SHOW_CHARS} more characters (--full prints all)`,
              );
          }
          process.stdout.write(`${out.join('\n')}\n`);
          return 0;
        }),
      );
    });

  dlq
    .command('replay')
    .description('put the original records back on their source topic and partition, marked as replays')
    .option('--class <class>', 'only this class')
    .option('--since <iso>', 'only dead letters written at or after this time')
    .option('--dry-run', 'say what would be replayed, write nothing')
    .option(
      '--force',
      'also replay lineages replayed before and records still poison with the current settings (one more attempt)',
    )
    .option('--max-attempts <n>', 'never replay a record dead-lettered this many times', '5')
    .action(
      async (opts: {
        class?: string;
        since?: string;
        dryRun?: boolean;
        force?: boolean;
        maxAttempts: string;
      }) => {
        const since = sinceOption('dlq replay', opts.since);
        const maxAttempts = Number(opts.maxAttempts);
        if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
          process.stderr.write(
            `rxingest dlq replay: --max-attempts "${opts.maxAttempts}" is invalid: expected a whole number ≥ 1\n`,
          );
          process.exit(2);
        }
        const config = toolConfig('dlq replay');
        await runTool('dlq replay', () =>
          withKafka(config, async (kafka) => {
            const result = await replayDeadLetters(kafka, config, {
              cls: opts.class,
              since,
              dryRun: opts.dryRun,
              force: opts.force,
              maxAttempts,
            });
            process.stdout.write(`${formatReplay(result, config)}\n`);
            return 0;
          }),
        );
      },
    );
  return dlq;
}

async function withKafka(config: Config, body: (kafka: ReturnType<typeof kafkaFor>) => Promise<number>) {
  const kafka = kafkaFor(config, 'dlq');
  // Fail fast, with the server's name, when Kafka cannot be reached.
  const admin = kafka.admin();
  await admin.connect().catch((err) => {
    throw asCannotRun(err, config);
  });
  await admin.disconnect();
  try {
    return await body(kafka);
  } catch (err) {
    const e = asCannotRun(err, config);
    throw e instanceof CannotRun ? e : err;
  }
}

const LABELS: Record<keyof ReplayResult['counts'], string> = {
  replayed: 'replayed',
  'already-replayed': 'already replayed (skipped)',
  'still-bad': 'still poison with the current settings (skipped)',
  'gave-up': 'tried too often (skipped, see --max-attempts)',
  'source-gone': 'original gone from the source topic (skipped)',
  'no-source': 'without x-source-* headers (skipped)',
};

export function formatReplay(r: ReplayResult, config: Config): string {
  const lines: string[] = [];
  const total = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
  const byClass = (o: Record<string, number>) =>
    Object.entries(o)
      .sort()
      .map(([c, n]) => `${c} ${n}`)
      .join(', ');
  const n = total(r.counts.replayed);
  lines.push(
    `${r.dryRun ? 'would replay' : 'replayed'} ${n} dead letter${n === 1 ? '' : 's'} from ${config.kafka.dlqTopic}${n > 0 ? ` (${byClass(r.counts.replayed)})` : ''}`,
  );
  for (const [outcome, label] of Object.entries(LABELS)) {
    if (outcome === 'replayed') continue;
    const c = r.counts[outcome as keyof ReplayResult['counts']];
    if (total(c) > 0) lines.push(`  ${label}: ${total(c)} (${byClass(c)})`);
  }
  const why = r.decisions.filter((d) => d.outcome !== 'replayed' && d.why).slice(0, 10);
  for (const d of why)
    lines.push(`    ${d.deadLetter.partition}:${d.deadLetter.offset} ${d.deadLetter.cls}: ${d.why}`);
  return lines.join('\n');
}
