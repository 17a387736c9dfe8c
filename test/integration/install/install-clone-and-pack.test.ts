import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnWorker } from '../../../harness/worker/process.js';
import { startIngestStop } from '../../support/deployments/installed-worker.js';

/**
 * The two other ways the worker is installed, each done as a user does it, from this
 * repository's committed HEAD (a clone sees nothing uncommitted): `git clone` + `npm install`
 * then `npm start`; and `npm pack` of that clone + `npm install -g` of the tarball, then the
 * `rxingest worker` command from the prefix. Each worker starts, indexes a few events,
 * commits them and exits 0 on SIGTERM. kafkajs must be patched in both (the worker refuses
 * to start otherwise): the postinstall runs patch-package in the clone and, for the global
 * install, in the installed package's own folder, from the patches/ the tarball ships.
 */
const repo = join(import.meta.dirname, '..', '..', '..');
const sh = promisify(execFile);
/** What a user's shell holds: no npm_* variables of an outer npm (its cache, prefix, scripts). */
const outerNpm = Object.keys(process.env).filter((k) => k.toLowerCase().startsWith('npm_'));
const userEnv = () => {
  const env = { ...process.env };
  for (const k of outerNpm) delete env[k];
  return env;
};
const npm = (args: string[], cwd: string) =>
  sh('npm', args, { cwd, env: userEnv(), maxBuffer: 64 * 1024 * 1024 }).catch(
    (err: Error & { stderr?: string }) => {
      throw new Error(`npm ${args.join(' ')} failed in ${cwd}: ${err.message}\n${err.stderr ?? ''}`);
    },
  );

let work: string;
let clone: string;
let prefix: string;
let tarball: string;
const timings: string[] = [];

async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  const out = await step();
  timings.push(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return out;
}

const isPatched = (kafkajsDir: string) =>
  readFileSync(join(kafkajsDir, 'src/producer/sendMessages.js'), 'utf8').includes('rxingest patch');

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'rxingest-installs-'));
  clone = join(work, 'clone');
  prefix = join(work, 'global');
  mkdirSync(prefix);
  await timed('git clone', () => sh('git', ['clone', '--quiet', repo, clone]));
  // --prefer-offline: metadata from npm's cache where it has it, for time; the lockfile (and,
  // for the tarball, the ranges in package.json) still decide what is installed.
  await timed('npm install (clone)', () =>
    npm(['install', '--prefer-offline', '--no-audit', '--no-fund'], clone),
  );
  // prepack builds dist/ afresh: the tarball carries what this HEAD compiles to.
  const packed = await timed('npm pack (clone, build included)', () =>
    npm(['pack', '--json', '--pack-destination', work], clone),
  );
  tarball = join(work, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
  await timed('npm install -g (tarball)', () =>
    npm(['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], work),
  );
  console.log(`installs in ${work}\n  ${timings.join('\n  ')}`);
}, 600_000);

afterAll(() => {
  const t0 = Date.now();
  if (work) rmSync(work, { recursive: true, force: true });
  console.log(`removed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});

describe('installed from a clone and from a packed tarball', () => {
  it('npm pack ships the compiled worker, the kafkajs patch and the examples, and nothing else of the checkout', async () => {
    const { stdout } = await sh('tar', ['tzf', tarball]);
    const files = stdout.split('\n').filter(Boolean);
    expect(files).toContain('package/dist/cli/main.js');
    expect(files).toContain('package/patches/kafkajs+2.2.4.patch');
    expect(files).toContain('package/examples/trigger-rules.json');
    const tops = new Set(files.map((f) => f.split('/')[1]));
    expect([...tops].sort()).toEqual(['README.md', 'dist', 'examples', 'package.json', 'patches']);
  });

  it('a clone with npm install: npm start runs the worker, which ingests a few events and exits 0 on SIGTERM', async () => {
    expect(isPatched(join(clone, 'node_modules/kafkajs'))).toBe(true);
    const { code, tail } = await startIngestStop('clone', (env, label) =>
      spawnWorker(env, label, { via: 'npm-start', cwd: clone, unset: outerNpm }),
    );
    expect(code, tail).toBe(0);
  });

  it('npm install -g of the tarball: the rxingest command runs the worker, which ingests a few events and exits 0 on SIGTERM', async () => {
    const installed = join(prefix, 'lib/node_modules/rxingest');
    // The postinstall ran in the installed package's folder, from the patches/ it shipped.
    expect(isPatched(join(installed, 'node_modules/kafkajs'))).toBe(true);
    expect(readdirSync(join(prefix, 'bin'))).toEqual(['rxingest']);
    const bin = join(prefix, 'bin/rxingest');
    // Started from a folder of its own, as a user runs a command, not from the package.
    const cwd = join(work, 'elsewhere');
    mkdirSync(cwd);
    const { code, tail } = await startIngestStop('global', (env, label) =>
      spawnWorker(env, label, { launch: { command: bin, args: ['worker'], cwd }, unset: outerNpm }),
    );
    expect(code, tail).toBe(0);
    expect(existsSync(join(cwd, 'node_modules')), 'nothing installed where it ran').toBe(false);
  });
});
