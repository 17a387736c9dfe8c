import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildContext, readRecipe } from '../../support/deployments/container-recipe.js';

/**
 * The Dockerfile's shape, read by a Dockerfile parser; the recipe itself is followed and its
 * worker started by test/integration/install/install-container-recipe.test.ts.
 */
const root = join(import.meta.dirname, '..', '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const recipe = readRecipe(read('Dockerfile'));
const SCRIPT = 'scripts/image/build-steps.sh';

describe('Dockerfile', () => {
  it('builds in one stage and runs production dependencies only in another, as a user other than root', () => {
    expect(recipe.stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    const runtime = recipe.stages[1]!.steps;
    expect(runtime).toContainEqual({ kind: 'run', command: `sh ${SCRIPT} runtime` });
    expect(read(SCRIPT)).toMatch(/^\s*runtime\)\n(?:\s*#.*\n|\s*require_patches\n)*\s*npm ci --omit=dev /m);
    expect(runtime).toContainEqual({ kind: 'copy', from: 'build', sources: ['/app/dist'], dest: './dist' });
    expect(recipe.image.user).toBe('node');
    expect(recipe.image.healthcheck?.command.join(' ')).toContain('/healthz');
  });

  it('gets everything it copies through .dockerignore, by Docker’s matching rules', () => {
    const context = buildContext(root);
    const copied = recipe.stages.flatMap((s) =>
      s.steps.flatMap((step) => (step.kind === 'copy' && step.from === undefined ? step.sources : [])),
    );
    for (const c of copied) {
      expect(
        context.some((f) => f === c || f.startsWith(`${c}/`)),
        c,
      ).toBe(true);
    }
  });
});
