import { spawn } from 'node:child_process';

/** What `rxingest <args>` printed, and how it ended (exit code, or the signal that ended it). */
export interface CliRun {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  /** Past this the command is killed and the run rejects, naming what it printed. */
  readonly timeoutMs?: number;
  /** For a command that goes on (the worker): SIGTERM once its output shows this, then its end. */
  readonly until?: RegExp;
}

/**
 * Runs `rxingest <args>` as a user runs it from a clone (through tsx, no build), with `env` over
 * this process's environment, and resolves at its end with stdout and stderr kept apart.
 */
export function runCli(
  args: readonly string[],
  env: Record<string, string>,
  { timeoutMs = 300_000, until }: CliOptions = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let signalled = false;
    const watch = () => {
      if (until !== undefined && !signalled && until.test(stdout + stderr)) {
        signalled = true;
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', (d) => {
      stdout += d;
      watch();
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      watch();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      const waited = until === undefined ? 'did not finish' : `never showed ${until}`;
      reject(
        new Error(`rxingest ${args.join(' ')} ${waited} in ${timeoutMs} ms; stderr: ${stderr.slice(-4000)}`),
      );
    }, timeoutMs);
    // 'close', not 'exit': by then both pipes are drained.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stdout, stderr });
    });
  });
}
