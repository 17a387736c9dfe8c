import { readFileSync } from 'node:fs';

/**
 * How `npm start` launches the worker, read from package.json's start script: the node flags
 * and the environment defaults. The harness starts workers the same way, whatever the entry.
 */

/** The node flags `npm start` gives the worker (package.json's start script, between `node` and the entry). */
export function shippedNodeFlags(startScript = packageStartScript()): string[] {
  const words = startScript.split(/\s+/);
  const node = words.indexOf('node');
  const entry = words.indexOf('dist/cli/main.js');
  if (node < 0 || entry < node) throw new Error(`unexpected start script: ${startScript}`);
  return words.slice(node + 1, entry);
}

/**
 * The environment `npm start` gives the worker where the caller has not: its
 * `NAME=${NAME:-value}` words before `exec` (glibc's arenas: docs/decisions.md, 13).
 */
export function shippedEnvDefaults(startScript = packageStartScript()): Record<string, string> {
  const defaults: Record<string, string> = {};
  for (const word of startScript.split(/\s+/)) {
    if (word === 'exec') break;
    const m = /^([A-Z_][A-Z0-9_]*)=\$\{\1:-([^}]*)\}$/.exec(word);
    if (m === null) throw new Error(`unexpected start script: ${startScript}`);
    defaults[m[1]!] = m[2]!;
  }
  return defaults;
}

/** `shippedEnvDefaults` with the caller's own values where it has them. */
export function shippedEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(Object.entries(shippedEnvDefaults()).map(([k, v]) => [k, env[k] ?? v]));
}

const packageStartScript = (): string =>
  (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
