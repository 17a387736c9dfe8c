import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const stack = (...args: string[]) =>
  run('bash', ['scripts/stack.sh', ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000 });

const servers = async (): Promise<Set<string>> => {
  const { stdout } = await stack('owned');
  return new Set(stdout.split('\n').filter(Boolean));
};

/**
 * Brings the real local stack up when it is not already running, and on teardown
 * stops exactly the servers this run started: the stack is left as it was found.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const before = await servers();
  try {
    await stack('up');
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`the local stack could not start:\n${e.stderr ?? e.message}`);
  }
  const started = [...(await servers())].filter((s) => !before.has(s));
  return async () => {
    if (started.length > 0) await stack('down', ...started);
  };
}
