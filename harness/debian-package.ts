import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface DebianCommand {
  /** The commands the package must bring, each answering `<command> <versionArgs>`. */
  readonly commands: readonly string[];
  readonly versionArgs: readonly string[];
  /** Debian's package name. */
  readonly pkg: string;
  /** What a user who is not root is told to do. */
  readonly hint: string;
}

const found = async (command: string, args: readonly string[]) => {
  try {
    await run(command, [...args], { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
};

/**
 * Makes sure a tool the tests or scripts run is on PATH: as root (CI, these machines) it is
 * installed from Debian's packages when missing, without recommends (Debian's prometheus
 * recommends the node exporter, a second daemon nobody asked for); otherwise the error says how.
 * Waits for apt's lock rather than failing when another install holds it.
 */
export async function ensureDebianCommand(tool: DebianCommand): Promise<void> {
  const missing = async () => {
    const present = await Promise.all(tool.commands.map((c) => found(c, tool.versionArgs)));
    return tool.commands.filter((_, i) => !present[i]);
  };
  const absent = await missing();
  if (absent.length === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`${absent.join(' and ')} not found: ${tool.hint}`);
  const apt = `apt-get -o DPkg::Lock::Timeout=300 -qq`;
  // One install at a time from this project (the unit tests and the integration setup may both
  // get here at once), and none when the one before has just brought the commands.
  const present = tool.commands.map((c) => `command -v ${c} >/dev/null`).join(' && ');
  await run(
    'flock',
    [
      '/tmp/rxingest-apt.lock',
      'bash',
      '-c',
      `${present} || { ${apt} update && DEBIAN_FRONTEND=noninteractive ${apt} -y --no-install-recommends install ${tool.pkg}; }`,
    ],
    { timeout: 10 * 60_000, maxBuffer: 16 * 1024 * 1024 },
  );
  const still = await missing();
  if (still.length > 0)
    throw new Error(`apt-get installed ${tool.pkg} but ${still.join(' and ')} still not found`);
}

/** Debian's `prometheus` package: the server and promtool. */
export const ensurePrometheus = (): Promise<void> =>
  ensureDebianCommand({
    commands: ['prometheus', 'promtool'],
    versionArgs: ['--version'],
    pkg: 'prometheus',
    hint: 'install Prometheus 2.x with promtool (Debian/Ubuntu: apt-get install --no-install-recommends prometheus; macOS: brew install prometheus)',
  });

/**
 * kcat (librdkafka): the independent Kafka reader of the contract checks (the integration
 * tests, the adaptive-concurrency benchmark).
 */
export const ensureKcat = (): Promise<void> =>
  ensureDebianCommand({
    commands: ['kcat'],
    versionArgs: ['-V'],
    pkg: 'kcat',
    hint: 'the contract checks read Kafka with it (Debian/Ubuntu: apt-get install kcat; macOS: brew install kcat)',
  });
