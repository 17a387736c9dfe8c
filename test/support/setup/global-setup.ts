import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { ensureKcat, ensurePrometheus } from '../../../harness/debian-package.js';
import { stopSecureStackIfStartedBy } from '../servers/secure-stack.js';

const run = promisify(execFile);
const stack = (...args: string[]) =>
  run('bash', ['scripts/stack.sh', ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000 });

const servers = async (): Promise<Set<string>> => {
  const { stdout } = await stack('owned');
  return new Set(stdout.split('\n').filter(Boolean));
};

/**
 * kcat (librdkafka) is the integration tests' independent Kafka reader; Prometheus scrapes a
 * worker and evaluates the dashboard's queries and the alert rules. As root (CI, these
 * machines) both are installed from Debian's packages when missing; otherwise say how.
 *
 * Brings the real local stack up when it is not already running, and on teardown
 * stops exactly the servers this run started: the stack is left as it was found.
 */
export default async function setup(): Promise<() => Promise<void>> {
  await ensureKcat();
  await ensurePrometheus();
  const before = await servers();
  try {
    await stack('up');
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`the local stack could not start:\n${e.stderr ?? e.message}`);
  }
  const started = [...(await servers())].filter((s) => !before.has(s));
  // The secured stack starts on demand (test/support/servers/secure-stack.ts), at most once per run;
  // the files that start it mark it with this run's id, and the teardown stops what it marked.
  const runId = randomUUID();
  process.env.RXINGEST_TEST_RUN = runId;
  return async () => {
    await stopSecureStackIfStartedBy(runId);
    if (started.length > 0) await stack('down', ...started);
  };
}
