import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../harness/ports.js';
import { spawnWorker, type WorkerProcess } from '../../../harness/worker/process.js';
import {
  buildContext,
  type LaidOutStage,
  layOutStages,
  type RecipeStep,
  readRecipe,
} from '../../support/deployments/container-recipe.js';
import {
  type InstallDeployment,
  ingestsAFew,
  installDeployment,
  started,
  stopWithSigterm,
} from '../../support/deployments/installed-worker.js';

/**
 * The container image, without a Docker engine (none runs here): the build context that
 * `.dockerignore` lets through (Docker's own matching rules), every stage of the Dockerfile
 * followed on this machine (its COPYs from that context, its RUNs, which are the steps of
 * scripts/image/build-steps.sh, with the stage's ENV), then the runtime stage's ENTRYPOINT
 * and CMD started in its WORKDIR as its USER, with the image's environment only, against
 * the local stack. What this cannot show (the base image's Alpine and musl, Docker's
 * PID 1 and signal delivery, the image actually built) is in docs/container.md.
 */
const repo = join(import.meta.dirname, '..', '..', '..');
const recipe = readRecipe(readFileSync(join(repo, 'Dockerfile'), 'utf8'));
const SCRIPT = 'scripts/image/build-steps.sh';
/** The `node` user of the official node images. */
const NODE_USER = { uid: 1000, gid: 1000 };
const runs = (stage: string) =>
  recipe.stages
    .find((s) => s.name === stage)!
    .steps.filter((s): s is Extract<RecipeStep, { kind: 'run' }> => s.kind === 'run')
    .map((s) => s.command);

let work: string;
let context: string[];
let stages: Map<string, LaidOutStage>;
let runtime: LaidOutStage;
let d: InstallDeployment;
let worker: WorkerProcess;
let httpPort: number;
const runTimes: string[] = [];

/** Each stage's `/root`, as a RUN sees it: HOME, with a copy of this machine's npm cache. */
function stageHome(stageRoot: string): string {
  const home = join(stageRoot, 'root');
  if (!existsSync(home)) {
    mkdirSync(home, { recursive: true });
    // Only a head start: npm ci installs what the lockfile pins (integrity-checked) either way.
    const cache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
    if (existsSync(join(cache, '_cacache')))
      cpSync(join(cache, '_cacache'), join(home, '.npm', '_cacache'), { recursive: true });
  }
  return home;
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) {
    throw new Error('the recipe test starts the worker as uid 1000 (the image’s USER node): run it as root');
  }
  const tStart = Date.now();
  work = mkdtempSync(join(tmpdir(), 'rxingest-image-'));
  // The `node` user must reach /app as it would in the image (where / is 755).
  chmodSync(work, 0o755);
  context = buildContext(repo);
  const t0 = Date.now();
  runTimes.push(`context: ${((t0 - tStart) / 1000).toFixed(1)} s, ${context.length} files`);
  stages = await layOutStages(recipe, {
    contextRoot: repo,
    contextFiles: context,
    into: work,
    // A RUN sees the base image's environment, not this test's (no npm_config_* of an outer
    // npm, whose cache `npm cache clean` would empty): PATH, and HOME at the stage's /root.
    runEnv: (root) => ({ PATH: process.env.PATH, HOME: stageHome(root), npm_config_prefer_offline: 'true' }),
    onRun: (stage, command, ms) => runTimes.push(`${stage}: RUN ${command} (${(ms / 1000).toFixed(1)} s)`),
  });
  runTimes.push(`all stages: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  runtime = stages.get(recipe.stages.at(-1)!.name)!;
  const t1 = Date.now();
  d = await installDeployment('image');
  httpPort = await freePort();
  runTimes.push(`topics and indices: ${((Date.now() - t1) / 1000).toFixed(1)} s`);
  console.log(`container recipe in ${work}\n  ${runTimes.join('\n  ')}`);
}, 600_000);

afterAll(async () => {
  if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill('SIGKILL');
    await worker.exited;
  }
  const t0 = Date.now();
  await d?.close();
  if (work) rmSync(work, { recursive: true, force: true });
  console.log(`cleaned up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});

describe('the container recipe, followed without an engine', () => {
  it('sends a build context, filtered by .dockerignore with Docker’s rules, that holds what the build copies and nothing else', () => {
    for (const f of [
      'package.json',
      'package-lock.json',
      'patches/kafkajs+2.2.4.patch',
      SCRIPT,
      'src/cli/main.ts',
    ]) {
      expect(context, f).toContain(f);
    }
    const tops = new Set(context.map((f) => f.split('/')[0]));
    expect([...tops].sort()).toEqual(
      [
        'examples',
        'package-lock.json',
        'package.json',
        'patches',
        'scripts',
        'src',
        'tsconfig.build.json',
        'tsconfig.json',
      ].sort(),
    );
    expect(context.filter((f) => f.startsWith('scripts/'))).toEqual([SCRIPT]);
  });

  it('runs every install and build step through scripts/image/build-steps.sh, with patches/ copied in first', () => {
    expect(runs('build')).toEqual([`sh ${SCRIPT} deps`, `sh ${SCRIPT} compile`]);
    expect(runs('runtime')).toEqual([`sh ${SCRIPT} runtime`]);
    for (const stage of recipe.stages) {
      const firstRun = stage.steps.findIndex((s) => s.kind === 'run');
      const copied = stage.steps
        .slice(0, firstRun)
        .flatMap((s) => (s.kind === 'copy' && s.from === undefined ? s.sources : []));
      expect(copied, stage.name).toEqual(expect.arrayContaining(['patches', SCRIPT, 'package-lock.json']));
    }
  });

  it('installs kafkajs patched and only the production dependencies in the runtime stage', () => {
    const app = runtime.workdir;
    // Lines the patch adds, in two of the files it changes.
    expect(readFileSync(join(app, 'node_modules/kafkajs/src/producer/sendMessages.js'), 'utf8')).toContain(
      'rxingest patch',
    );
    expect(readFileSync(join(app, 'node_modules/kafkajs/src/admin/index.js'), 'utf8')).toContain(
      'rxingest patch',
    );
    // The postinstall ran there: patch-package is a production dependency.
    expect(existsSync(join(app, 'node_modules/patch-package/package.json'))).toBe(true);
    for (const dev of ['typescript', 'vitest', 'tsx', '@biomejs/biome']) {
      expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
    }
    expect(existsSync(join(app, 'dist/cli/main.js'))).toBe(true);
    expect(existsSync(join(app, 'examples/trigger-rules.json'))).toBe(true);
    expect(existsSync(join(app, 'src')), 'no sources in the runtime stage').toBe(false);
  });

  it('refuses to install at all when patches/ is missing, rather than installing kafkajs unpatched', async () => {
    const bare = join(work, 'no-patches');
    mkdirSync(bare);
    cpSync(join(runtime.workdir, 'package.json'), join(bare, 'package.json'));
    const res = await promisify(execFile)('sh', [join(runtime.workdir, SCRIPT), 'runtime'], {
      cwd: bare,
      env: { PATH: process.env.PATH, HOME: bare },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('no patches/*.patch');
    expect(existsSync(join(bare, 'node_modules'))).toBe(false);
  });

  it('starts the worker as the image does (ENTRYPOINT and CMD, in WORKDIR, as USER node, the image’s ENV only) and it ingests', async () => {
    expect(recipe.image.user).toBe('node');
    expect(recipe.image.env).toEqual({ NODE_ENV: 'production' });
    const [command, ...args] = [...recipe.image.entrypoint, ...recipe.image.cmd];
    expect([command, ...args]).toEqual(['node', '--max-semi-space-size=4', 'dist/cli/main.js', 'worker']);
    // The node user's home, the only place in the image it may write to.
    const home = join(runtime.root, 'home/node');
    mkdirSync(home, { recursive: true });
    chownSync(home, NODE_USER.uid, NODE_USER.gid);
    // The rules file the image ships, named as a deployment would name it.
    expect(existsSync(join(runtime.workdir, 'examples/trigger-rules.json'))).toBe(true);
    worker = spawnWorker(
      {
        ...d.env,
        ...recipe.image.env,
        HOME: home,
        TRIGGER_RULES: 'examples/trigger-rules.json',
        HTTP_PORT: String(httpPort),
      },
      `${d.names.group}-image`,
      { launch: { command: command!, args, cwd: runtime.workdir, ...NODE_USER, cleanEnv: true } },
    );
    await started(worker);
    // Exec form: no shell in between, node itself is the process the runtime signals.
    const argv = readFileSync(`/proc/${worker.child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(argv).toEqual([command, ...args]);
    const status = readFileSync(`/proc/${worker.child.pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(NODE_USER.uid));
    const environ = readFileSync(`/proc/${worker.child.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain('NODE_ENV=production');
    const ids = await ingestsAFew(worker, d);
    expect(ids).toHaveLength(12);
  });

  it('passes the Dockerfile’s HEALTHCHECK while it runs', async () => {
    const { command, flags } = recipe.image.healthcheck!;
    expect(command.join(' ')).toContain('/healthz');
    const res = await healthcheck(command, Number.parseInt(flags.timeout ?? '30', 10) * 1000);
    expect(res, 'exit code of the HEALTHCHECK command').toBe(0);
  });

  it('stops with exit 0 on SIGTERM, after which the HEALTHCHECK fails', async () => {
    const { code, tail } = await stopWithSigterm(worker);
    expect(code, tail).toBe(0);
    expect(readFileSync(worker.logFile, 'utf8')).toContain('"msg":"stopped"');
    expect(await healthcheck(recipe.image.healthcheck!.command, 3_000)).not.toBe(0);
  });
});

/** The HEALTHCHECK's exec form run as Docker runs it: in the container's environment, as its user. */
function healthcheck(command: string[], timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    execFile(
      command[0]!,
      command.slice(1),
      {
        cwd: runtime.workdir,
        env: { PATH: process.env.PATH, ...recipe.image.env, HTTP_PORT: String(httpPort) },
        uid: NODE_USER.uid,
        gid: NODE_USER.gid,
        timeout: timeoutMs,
      },
      (err) => resolve(err === null ? 0 : typeof err.code === 'number' ? err.code : -1),
    );
  });
}
