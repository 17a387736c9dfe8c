import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix } from 'node:path';
import { promisify } from 'node:util';
import type { Ignore } from '@balena/dockerignore';
import { DockerfileParser, type Instruction } from 'dockerfile-ast';

const run = promisify(execFile);
// A CommonJS module whose types declare an ES default export: required, it is the function.
const dockerignore = createRequire(import.meta.url)('@balena/dockerignore') as (options: {
  ignorecase: boolean;
}) => Ignore;

/**
 * The Dockerfile read as a build would read it, for a recipe test without a Docker engine:
 * its stages' steps in order and the final image's configuration. Any instruction or form
 * the emulation below does not reproduce throws, so a Dockerfile that outgrows it fails the
 * test rather than being half-followed.
 */
export type RecipeStep =
  | { readonly kind: 'workdir'; readonly dir: string }
  | { readonly kind: 'env'; readonly vars: Readonly<Record<string, string>> }
  | { readonly kind: 'copy'; readonly from?: string; readonly sources: string[]; readonly dest: string }
  | { readonly kind: 'run'; readonly command: string };

export interface RecipeStage {
  readonly name: string;
  readonly image: string;
  readonly steps: RecipeStep[];
}

export interface ImageConfig {
  readonly env: Record<string, string>;
  readonly workdir: string;
  readonly user?: string;
  readonly exposed: string[];
  readonly entrypoint: string[];
  readonly cmd: string[];
  /** HEALTHCHECK's exec form, and its flags (interval, timeout, …). */
  readonly healthcheck?: { readonly command: string[]; readonly flags: Record<string, string> };
}

export interface Recipe {
  readonly stages: RecipeStage[];
  readonly image: ImageConfig;
}

/** A JSON array of strings (exec form), or a failure naming the instruction. */
function execForm(text: string, what: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${what} is not in exec form (a JSON array): ${text}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
    throw new Error(`${what} is not a JSON array of strings: ${text}`);
  }
  return parsed;
}

function flagsOf(instruction: Instruction): Record<string, string> {
  const flags: Record<string, string> = {};
  const withFlags = instruction as Instruction & {
    getFlags?: () => { getName(): string; getValue(): string | null }[];
  };
  for (const f of withFlags.getFlags?.() ?? []) flags[f.getName()] = f.getValue() ?? '';
  return flags;
}

export function readRecipe(dockerfileText: string): Recipe {
  const dockerfile = DockerfileParser.parse(dockerfileText);
  const stages: RecipeStage[] = [];
  let env: Record<string, string> = {};
  let workdir = '/';
  let user: string | undefined;
  let exposed: string[] = [];
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  let healthcheck: ImageConfig['healthcheck'];
  for (const instruction of dockerfile.getInstructions()) {
    const keyword = instruction.getKeyword();
    const content = instruction.getArgumentsContent() ?? '';
    const flags = flagsOf(instruction);
    const stage = stages.at(-1);
    if (keyword !== 'FROM' && stage === undefined) throw new Error(`${keyword} before any FROM`);
    if (content.includes('$')) throw new Error(`variables are not emulated: ${keyword} ${content}`);
    switch (keyword) {
      case 'FROM': {
        const args = instruction.getArguments().map((a) => a.getValue());
        if (args.length !== 3 || args[1]!.toUpperCase() !== 'AS')
          throw new Error(`unnamed stage: FROM ${content}`);
        stages.push({ name: args[2]!, image: args[0]!, steps: [] });
        env = {};
        workdir = '/';
        user = undefined;
        exposed = [];
        entrypoint = [];
        cmd = [];
        healthcheck = undefined;
        break;
      }
      case 'WORKDIR':
        workdir = posix.resolve(workdir, content);
        stage!.steps.push({ kind: 'workdir', dir: workdir });
        break;
      case 'ENV': {
        const props = (
          instruction as Instruction & { getProperties(): { getName(): string; getValue(): string | null }[] }
        ).getProperties();
        const vars = Object.fromEntries(props.map((p) => [p.getName(), p.getValue() ?? '']));
        env = { ...env, ...vars };
        stage!.steps.push({ kind: 'env', vars });
        break;
      }
      case 'COPY': {
        const unknown = Object.keys(flags).filter((f) => f !== 'from');
        if (unknown.length > 0) throw new Error(`COPY --${unknown.join(', --')} is not emulated`);
        const args = instruction.getArguments().map((a) => a.getValue());
        if (args.length < 2 || args.some((a) => /[*?[]/.test(a) || a.startsWith('<<'))) {
          throw new Error(`COPY form not emulated: ${content}`);
        }
        stage!.steps.push({ kind: 'copy', from: flags.from, sources: args.slice(0, -1), dest: args.at(-1)! });
        break;
      }
      case 'RUN':
        if (Object.keys(flags).length > 0 || content.startsWith('[') || content.includes('<<')) {
          throw new Error(`RUN form not emulated (flags, exec form or heredoc): ${content}`);
        }
        stage!.steps.push({ kind: 'run', command: content });
        break;
      case 'USER':
        user = content;
        break;
      case 'EXPOSE':
        exposed = [...exposed, ...content.split(/\s+/)];
        break;
      case 'HEALTHCHECK': {
        const [sub, ...rest] = content.split(/\s+/);
        if (sub !== 'CMD') throw new Error(`HEALTHCHECK ${sub} is not emulated`);
        healthcheck = { command: execForm(rest.join(' '), 'HEALTHCHECK CMD'), flags };
        break;
      }
      case 'ENTRYPOINT':
        entrypoint = execForm(content, 'ENTRYPOINT');
        break;
      case 'CMD':
        cmd = execForm(content, 'CMD');
        break;
      default:
        throw new Error(`${keyword} is not emulated by the recipe test`);
    }
  }
  if (stages.length === 0) throw new Error('no stage');
  return { stages, image: { env, workdir, user, exposed, entrypoint, cmd, healthcheck } };
}

/**
 * The build context `docker build <root>` sends: every file under root that `.dockerignore`
 * lets through, by Docker's own matching rules (@balena/dockerignore ports them from Moby:
 * patterns anchored at the context root, a file kept or dropped with its parent directories,
 * the last matching line winning). Paths relative to root, with `/`, sorted.
 */
export function buildContext(root: string): string[] {
  const rules = existsSync(join(root, '.dockerignore'))
    ? readFileSync(join(root, '.dockerignore'), 'utf8')
    : '';
  const matcher = dockerignore({ ignorecase: false }).add(rules);
  const files: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (entry.isDirectory()) continue;
    const path = posix.relative(root, join(entry.parentPath, entry.name));
    if (matcher.ignores(path)) continue;
    if (!entry.isFile()) throw new Error(`the context holds ${path}, which is not a regular file`);
    files.push(path);
  }
  return files.sort();
}

export interface LaidOutStage {
  readonly name: string;
  /** The directory that stands for the stage's `/`. */
  readonly root: string;
  /** Where its last WORKDIR lies on this machine. */
  readonly workdir: string;
}

export interface LayOptions {
  /** The context directory and the files of it that the build may see (buildContext). */
  readonly contextRoot: string;
  readonly contextFiles: readonly string[];
  /** Every stage gets its own directory `<into>/<stage name>`. */
  readonly into: string;
  /** The environment every RUN starts from (the base image's), before the stage's ENV. */
  readonly runEnv: (stageRoot: string) => NodeJS.ProcessEnv;
  /** Told of each RUN as it starts, for the test's log. */
  readonly onRun?: (stage: string, command: string, ms: number) => void;
}

/** A path of a stage, on this machine. */
const inStage = (stageRoot: string, path: string) => join(stageRoot, path);

/**
 * Docker's COPY, from the context (only the files it let through) or from an earlier stage:
 * a directory's contents go into the destination; a file goes into a destination that ends
 * in `/` (or takes several sources) under its own name, else to the destination path.
 */
function copyStep(
  step: Extract<RecipeStep, { kind: 'copy' }>,
  stageRoot: string,
  workdir: string,
  { contextRoot, contextFiles, into }: LayOptions,
) {
  const destPath = posix.resolve(workdir, step.dest);
  const destIsDir = step.dest.endsWith('/') || step.sources.length > 1;
  for (const raw of step.sources) {
    const source = posix.normalize(raw).replace(/\/$/, '').replace(/^\.\//, '');
    if (step.from !== undefined) {
      const from = inStage(join(into, step.from), posix.resolve('/', source));
      if (!existsSync(from)) throw new Error(`COPY --from=${step.from} ${raw}: not in that stage`);
      const target =
        statSync(from).isDirectory() || !destIsDir ? destPath : posix.join(destPath, posix.basename(source));
      cpSync(from, inStage(stageRoot, target), { recursive: true });
      continue;
    }
    const underDir = contextFiles.filter((f) => f.startsWith(`${source}/`));
    if (contextFiles.includes(source)) {
      const target = destIsDir ? posix.join(destPath, posix.basename(source)) : destPath;
      mkdirSync(dirname(inStage(stageRoot, target)), { recursive: true });
      cpSync(join(contextRoot, source), inStage(stageRoot, target));
    } else if (underDir.length > 0) {
      for (const f of underDir) {
        const target = inStage(stageRoot, posix.join(destPath, f.slice(source.length + 1)));
        mkdirSync(dirname(target), { recursive: true });
        cpSync(join(contextRoot, f), target);
      }
    } else {
      throw new Error(
        `COPY ${raw}: not in the build context (.dockerignore leaves it out, or it does not exist)`,
      );
    }
  }
}

/**
 * Follows every stage of the recipe on this machine: WORKDIR, ENV and COPY as Docker does
 * them, each RUN through `/bin/sh -c` in the stage's working directory, with the stage's
 * environment. Stages run side by side as BuildKit runs them, a `COPY --from` waiting for
 * its stage to finish. Returns where each stage ended up.
 */
export async function layOutStages(recipe: Recipe, options: LayOptions): Promise<Map<string, LaidOutStage>> {
  const stages = new Map<string, Promise<LaidOutStage>>();
  const finished = (name: string) => {
    const stage = stages.get(name);
    if (stage === undefined) throw new Error(`COPY --from=${name}: no earlier stage of that name`);
    return stage;
  };
  for (const stage of recipe.stages) stages.set(stage.name, layOutStage(stage, options, finished));
  // Every stage settles before a failure is reported: none is left running behind it.
  const settled = await Promise.allSettled(stages.values());
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  const laid = new Map<string, LaidOutStage>();
  for (const r of settled) if (r.status === 'fulfilled') laid.set(r.value.name, r.value);
  return laid;
}

async function layOutStage(
  stage: RecipeStage,
  options: LayOptions,
  finished: (name: string) => Promise<LaidOutStage>,
): Promise<LaidOutStage> {
  const root = join(options.into, stage.name);
  mkdirSync(root, { recursive: true });
  let workdir = '/';
  let env: Record<string, string> = {};
  for (const step of stage.steps) {
    if (step.kind === 'workdir') {
      workdir = step.dir;
      mkdirSync(inStage(root, workdir), { recursive: true });
    } else if (step.kind === 'env') {
      env = { ...env, ...step.vars };
    } else if (step.kind === 'copy') {
      if (step.from !== undefined) await finished(step.from);
      copyStep(step, root, workdir, options);
    } else {
      const started = Date.now();
      try {
        await run('/bin/sh', ['-c', step.command], {
          cwd: inStage(root, workdir),
          env: { ...options.runEnv(root), ...env },
          maxBuffer: 64 * 1024 * 1024,
        });
      } catch (err) {
        const e = err as Error & { stdout?: string; stderr?: string };
        throw new Error(
          `RUN ${step.command} (stage ${stage.name}) failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
        );
      }
      options.onRun?.(stage.name, step.command, Date.now() - started);
    }
  }
  return { name: stage.name, root, workdir: inStage(root, workdir) };
}
