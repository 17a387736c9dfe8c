import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { shippedEnv, shippedEnvDefaults, shippedNodeFlags } from '../../../harness/worker/shipped-launch.js';

/**
 * The worker's node flags (its young generation: docs/decisions.md, 12) live on node's command line,
 * the only place V8 takes them. Every way the README starts it must carry the same ones.
 */
const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;

describe('the worker’s node flags', () => {
  const shipped = shippedNodeFlags(scripts.start!);

  it('npm start bounds the young generation: 4 MB semi-spaces', () => {
    expect(shipped).toEqual(['--max-semi-space-size=4']);
  });

  it('npm run demo, the rxingest command (its shebang) and the container image start node the same way', () => {
    expect(shippedNodeFlags(scripts.demo!)).toEqual(shipped);
    const shebang = read('src/cli/main.ts').split('\n')[0]!;
    expect(shebang).toBe(`#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node ${shipped.join(' ')}`);
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...shipped, 'dist/cli/main.js']);
  });

  it('npm start and npm run demo hold glibc’s malloc arenas to 2 unless the caller set a number', () => {
    expect(shippedEnvDefaults(scripts.start!)).toEqual({ MALLOC_ARENA_MAX: '2' });
    expect(shippedEnvDefaults(scripts.demo!)).toEqual({ MALLOC_ARENA_MAX: '2' });
    const shebang = read('src/cli/main.ts').split('\n')[0]!;
    expect(shebang.startsWith('#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node ')).toBe(true);
  });

  it('the start script’s shell gives the caller’s own MALLOC_ARENA_MAX precedence', () => {
    const script = scripts.start!.replace(/exec node .*$/, 'exec env');
    const run = (env: NodeJS.ProcessEnv) =>
      execFileSync('sh', ['-c', script], { env, encoding: 'utf8' })
        .split('\n')
        .find((l) => l.startsWith('MALLOC_ARENA_MAX='));
    expect(run({ PATH: process.env.PATH })).toBe('MALLOC_ARENA_MAX=2');
    expect(run({ PATH: process.env.PATH, MALLOC_ARENA_MAX: '8' })).toBe('MALLOC_ARENA_MAX=8');
  });

  it('the benchmarks start their workers with npm start’s flags and environment', () => {
    expect(shippedEnv({})).toEqual({ MALLOC_ARENA_MAX: '2' });
    expect(shippedEnv({ MALLOC_ARENA_MAX: '4' })).toEqual({ MALLOC_ARENA_MAX: '4' });
    expect(() => shippedEnvDefaults('FOO=1 exec node dist/cli/main.js worker')).toThrow(
      /unexpected start script/,
    );
    expect(shippedNodeFlags()).toEqual(shipped);
    expect(shippedNodeFlags('exec node --a=1 --b dist/cli/main.js worker')).toEqual(['--a=1', '--b']);
    expect(() => shippedNodeFlags('exec tsx src/cli/main.ts worker')).toThrow(/unexpected start script/);
  });
});
