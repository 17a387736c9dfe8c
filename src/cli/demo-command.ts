import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { logLevel } from 'kafkajs';
import { pino } from 'pino';
import { createElasticsearch, resolveSearchEngine } from '../clients/elasticsearch.js';
import { createKafka } from '../clients/kafka.js';
import { engineLabel } from '../clients/search-engine.js';
import { ConfigError, loadConfig } from '../config/config.js';
import { redactUrl } from '../config/redact-url.js';
import { runProducer } from '../generator/produce.js';
import { describeWorkload, workloadRecords } from '../generator/workload.js';
import { createLogger } from '../log/logger.js';
import { secretValues } from '../log/secrets.js';
import type { MetricsSnapshot } from '../metrics/metric-labels.js';
import { createIngestProducer } from '../producer/index.js';
import { setHeapGrowth } from '../pushback/memory/heap-growth.js';
import { startWorker } from '../worker/worker.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The demo's settings: the environment, over the stack's own defaults. The stack puts its
 * search engine on ES_PORT (another engine is started beside the default one on a port of its
 * own), so without ES_NODE the demo talks to the engine on that port, not to 9200.
 */
export function demoEnv(env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  return {
    TRIGGER_RULES: join(root, 'examples', 'trigger-rules.json'),
    ...(env.ES_PORT !== undefined &&
      env.ES_NODE === undefined && { ES_NODE: `http://127.0.0.1:${env.ES_PORT}` }),
    ...env,
  };
}

/** `rxingest demo`: the whole job on the local stack, with a live progress line and a summary. */
export function demoCommand(): Command {
  return new Command('demo')
    .description(
      'bring the local stack up, run the worker and the load generator, show progress, print a summary',
    )
    .option('--rate <msgs>', 'messages per second from the generator', '2000')
    .option('--duration <seconds>', 'how long the generator sends', '30')
    .option('--clients <n>', 'number of clients', '200')
    .option('--partitions <n>', 'partitions of the input topic when the demo creates it', '8')
    .option('--seed <n>', 'generator seed (default: new each run, so runs do not replay each other)')
    .option('--no-stack', 'do not run `scripts/stack.sh up` (the servers are already there)')
    .action(async (opts) => {
      const num = (name: string, v: string, min: number) => {
        const n = Number(v);
        if (!Number.isFinite(n) || n < min) {
          process.stderr.write(`rxingest demo: --${name} "${v}" is invalid: expected a number ≥ ${min}\n`);
          process.exit(2);
        }
        return n;
      };
      const rate = num('rate', opts.rate, 1);
      const durationMs = num('duration', opts.duration, 1) * 1000;
      const clients = num('clients', opts.clients, 1);
      const partitions = num('partitions', opts.partitions, 1);
      const seed = opts.seed === undefined ? Date.now() % 2 ** 32 : num('seed', opts.seed, 0);

      if (opts.stack) await run('bash', [join(root, 'scripts', 'stack.sh'), 'up']);

      let config: ReturnType<typeof loadConfig>;
      try {
        config = loadConfig(demoEnv(process.env));
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`rxingest: invalid configuration: ${err.message}\n`);
          process.exit(2);
        }
        throw err;
      }
      const topic = config.kafka.topics[0]!;
      const kafka = createKafka(config.kafka, {
        clientId: 'rxingest-demo',
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      if (!(await admin.listTopics()).includes(topic)) {
        await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
        say(`created topic ${topic} with ${partitions} partitions`);
      }

      const logFile = join(process.env.RXINGEST_STACK_DIR ?? join(root, '.stack'), 'logs', 'demo-worker.log');
      mkdirSync(dirname(logFile), { recursive: true });
      const log = createLogger(
        { level: 'info', secrets: secretValues(config) },
        pino.destination({ dest: logFile, sync: false }),
      );
      say(`worker log: ${logFile}`);
      setHeapGrowth(config.control.heapGrowthPercent);
      const worker = await startWorker({ config, log }).catch((err: Error) => {
        // e.g. HTTP_PORT in use by another worker: one line, not a stack trace.
        say(`rxingest demo: could not start the worker: ${err.message}`);
        process.exit(1);
      });
      say(
        worker.httpUrl
          ? `metrics: ${worker.httpUrl}/metrics   health: ${worker.httpUrl}/healthz   readiness: ${worker.httpUrl}/readyz`
          : 'HTTP is off (HTTP_PORT=0): no /metrics, /healthz or /readyz',
      );

      const abort = new AbortController();
      let interrupted = false;
      process.once('SIGINT', () => {
        interrupted = true;
        abort.abort();
        say('\nCtrl-C: stopping the generator, draining the worker…');
      });

      // rxingest's producer library (idempotent, one request in flight, hot-client partitioner).
      const { producer: ingest, kafkaProducer: producer } = createIngestProducer(kafka);
      await producer.connect();
      // Generated lazily while sending, with message ts from now: end-to-end latency
      // (rxingest_e2e_latency_seconds) then measures the worker, not the time spent planning.
      const workload = {
        seed,
        ratePerSec: rate,
        durationMs,
        clients,
        shuffleVersions: 0.1,
        baseTimeMs: Date.now(),
      };
      const plan = workloadRecords(workload);
      say(
        `sending ${describeWorkload(workload).total} messages at ${rate}/s for ${durationMs / 1000} s (seed ${seed}) to ${topic}`,
      );

      let last: MetricsSnapshot = await worker.metrics.snapshot();
      let lastAt = Date.now();
      const progress = setInterval(async () => {
        const now = await worker.metrics.snapshot();
        const dt = (Date.now() - lastAt) / 1000;
        const rateIn = (now.recordsIn - last.recordsIn) / dt;
        const out = now.indexed + now.duplicates + now.stale + now.deadLetters;
        const outBefore = last.indexed + last.duplicates + last.stale + last.deadLetters;
        line(
          `in ${fmt(rateIn)}/s  out ${fmt((out - outBefore) / dt)}/s  | indexed ${now.indexed}  ` +
            `duplicates ${now.duplicates}  stale ${now.stale}  dead letters ${now.deadLetters}  ` +
            `triggers ${now.triggers}  | in flight ${now.inFlight}  lag ${now.lag}`,
        );
        last = now;
        lastAt = Date.now();
      }, 1000);

      const produced = await runProducer(
        { topic, records: plan, signal: abort.signal },
        { producer: ingest },
      ).catch((err) => {
        say(`\ngenerator failed: ${(err as Error).message}`);
        return undefined;
      });
      await producer.disconnect();
      const sent = produced?.total ?? 0;

      // Wait until the worker has taken in and finished everything that was sent.
      const deadline = Date.now() + 120_000;
      while (!interrupted && Date.now() < deadline) {
        const s = await worker.metrics.snapshot();
        if (s.recordsIn >= sent && s.inFlight === 0) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      clearInterval(progress);
      await worker.stop();
      const final = await worker.metrics.snapshot();

      const engine = await resolveSearchEngine(config.elasticsearch);
      const es = createElasticsearch(config.elasticsearch, { requestTimeout: 30_000 }, engine);
      const store = engineLabel(engine).split(' ')[0]!;
      await es.indices.refresh({
        index: [config.elasticsearch.eventsIndex, config.elasticsearch.profilesIndex],
      });
      const count = async (index: string) => (await es.count({ index })).count;
      say('');
      say('summary');
      say(`  sent by the generator            ${sent}`);
      say(`  taken in by the worker           ${final.recordsIn}`);
      say(`  indexed / duplicates / stale     ${final.indexed} / ${final.duplicates} / ${final.stale}`);
      say(`  dead letters                     ${final.deadLetters}  (to ${config.kafka.dlqTopic})`);
      say(`  triggers sent                    ${final.triggers}  (to ${config.kafka.triggersTopic})`);
      say(
        `  ${`${store} ${config.elasticsearch.eventsIndex}`.padEnd(32)} ${await count(config.elasticsearch.eventsIndex)} documents`,
      );
      say(
        `  ${`${store} ${config.elasticsearch.profilesIndex}`.padEnd(32)} ${await count(config.elasticsearch.profilesIndex)} documents`,
      );
      say(
        `  (index totals include earlier runs)  check: curl -s '${redactUrl(config.elasticsearch.node)}/${config.elasticsearch.eventsIndex}/_count'`,
      );
      say('  the local stack is still up: npm run stack:down stops it');
      await es.close();
      await admin.disconnect();
      process.exit(0);
    });
}

const fmt = (n: number) => String(Math.round(n)).padStart(6);
const say = (s: string) => process.stderr.write(`${s}\n`);
const line = (s: string) => process.stderr.write(process.stderr.isTTY ? `\r${s}\x1b[K` : `${s}\n`);

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}`)),
    );
  });
}
