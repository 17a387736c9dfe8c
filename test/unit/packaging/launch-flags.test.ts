import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { shippedNodeFlags } from '../../../bench/lib/worker.js';

/**
 * The worker's node flags (its young generation: README, Memory) live on node's command line,
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
    expect(shebang).toBe(`#!/usr/bin/env -S node ${shipped.join(' ')}`);
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...shipped, 'dist/cli/main.js']);
  });

  it('the benchmarks start their workers with npm start’s flags', () => {
    expect(shippedNodeFlags()).toEqual(shipped);
    expect(shippedNodeFlags('exec node --a=1 --b dist/cli/main.js worker')).toEqual(['--a=1', '--b']);
    expect(() => shippedNodeFlags('exec tsx src/cli/main.ts worker')).toThrow(/unexpected start script/);
  });
});
