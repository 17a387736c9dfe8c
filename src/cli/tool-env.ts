import { type Config, ConfigError, loadConfig } from '../config/config.js';
import { CannotRun } from '../tools/clients.js';

/** The worker's configuration for a tool, or exit 2 with the one line that names the bad setting. */
export function toolConfig(tool: string): Config {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`rxingest ${tool}: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** `--since ISO` as a Date, or exit 2 naming the option. */
export function sinceOption(tool: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) {
    process.stderr.write(
      `rxingest ${tool}: --since ${JSON.stringify(value)} is invalid: expected an ISO 8601 time such as 2026-11-30T12:00:00Z\n`,
    );
    process.exit(2);
  }
  return new Date(ms);
}

/** Runs a tool's body: a CannotRun (or anything unexpected) ends with one line and exit 2. */
export async function runTool(tool: string, body: () => Promise<number>): Promise<never> {
  let code: number;
  try {
    code = await body();
  } catch (err) {
    const message =
      err instanceof CannotRun ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
    process.stderr.write(`rxingest ${tool}: cannot run: ${message.replace(/[\r\n]+/g, ' ')}\n`);
    code = 2;
  }
  process.exit(code);
}
