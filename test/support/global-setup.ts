import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { stopSecureStackIfStartedBy } from './secure-stack.js';

const run = promisify(execFile);
const stack = (...args: string[]) =>
  run('bash', ['scripts/stack.sh', ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000 });

const servers = async (): Promise<Set<string>> => {
  const { stdout } = await stack('owned');
  return new Set(stdout.split('\n').filter(Boolean));
};

/**
 * The integration tests' outside tools, by command and Debian package: kcat (librdkafka) is
 * their independent Kafka reader, `ss` (iproute2) cuts a client's connections from outside.
 * As root (CI, these machines) a missing one is installed from Debian's packages; otherwise
 * say how.
 */
const TOOLS = [
  { command: 'kcat', probe: ['-V'], debian: 'kcat', elsewhere: 'macOS: brew install kcat' },
  { command: 'ss', probe: ['-V'], debian: 'iproute2', elsewhere: 'Linux only' },
] as const;

async function ensureTools(): Promise<void> {
  const missing: (typeof TOOLS)[number][] = [];
  for (const tool of TOOLS) {
    try {
      await run(tool.command, [...tool.probe]);
    } catch {
      missing.push(tool);
    }
  }
  if (missing.length === 0) return;
  const packages = missing.map((t) => t.debian).join(' ');
  if (process.getuid?.() !== 0) {
    throw new Error(
      `the integration tests need ${missing.map((t) => `${t.command} (Debian/Ubuntu: apt-get install ${t.debian}; ${t.elsewhere})`).join(', ')}`,
    );
  }
  await run(
    'bash',
    ['-c', `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${packages}`],
    { timeout: 10 * 60_000 },
  );
}

/**
 * Brings the real local stack up when it is not already running, and on teardown
 * stops exactly the servers this run started: the stack is left as it was found.
 */
export default async function setup(): Promise<() => Promise<void>> {
  await ensureTools();
  const before = await servers();
  try {
    await stack('up');
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`the local stack could not start:\n${e.stderr ?? e.message}`);
  }
  const started = [...(await servers())].filter((s) => !before.has(s));
  // The secured stack starts on demand (test/support/secure-stack.ts), at most once per run;
  // the files that start it mark it with this run's id, and the teardown stops what it marked.
  const runId = randomUUID();
  process.env.RXINGEST_TEST_RUN = runId;
  return async () => {
    await stopSecureStackIfStartedBy(runId);
    if (started.length > 0) await stack('down', ...started);
  };
}
