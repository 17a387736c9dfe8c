import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** Runs scripts/stack.sh with its own state folder and ports, so the running stack is untouched. */
async function stack(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run('bash', ['scripts/stack.sh', ...args], {
      env: { ...process.env, RXINGEST_STACK_MODE: 'native', ...env },
      timeout: 180_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('scripts/stack.sh', () => {
  const state = mkdtempSync(join(tmpdir(), 'rxingest-stack-'));
  afterAll(() => rmSync(state, { recursive: true, force: true }));

  it('says which server could not start, why, and shows the last lines of its log', async () => {
    // A heap size the JVM refuses: Elasticsearch exits at once, and up must say so clearly.
    const r = await stack(['up'], {
      RXINGEST_STACK_DIR: state,
      ES_PORT: '19201',
      ES_HEAP: 'lots',
      KAFKA_PORT: process.env.KAFKA_PORT ?? '9092', // already up: used as it is
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('[stack] ERROR: Elasticsearch could not start: the JVM exited');
    expect(r.stderr).toMatch(/last lines of .*elasticsearch\.log:/);
    expect(r.stderr).toMatch(/Invalid (initial|maximum) heap size/);
  });

  it('status reports a server that is down and exits non-zero', async () => {
    const r = await stack(['status'], { RXINGEST_STACK_DIR: state, ES_PORT: '19202' });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toMatch(/^elasticsearch\s+down$/m);
    expect(r.stdout).toMatch(/^kafka\s+up/m);
  });

  it('refuses an unknown search engine with one clear line', async () => {
    const r = await stack(['status'], { RXINGEST_STACK_DIR: state, RXINGEST_SEARCH_ENGINE: 'solr' });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      "[stack] ERROR: RXINGEST_SEARCH_ENGINE='solr' is not one of elasticsearch, opensearch",
    );
  });

  it('status names the engine on ES_PORT', async () => {
    const r = await stack(['status'], {
      RXINGEST_STACK_DIR: state,
      RXINGEST_SEARCH_ENGINE: 'opensearch',
      ES_PORT: '19203',
    });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toMatch(/^opensearch\s+down$/m);
  });

  it('refuses an unknown command with one clear line', async () => {
    const r = await stack(['sideways'], { RXINGEST_STACK_DIR: state });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe("[stack] ERROR: unknown command 'sideways' (use up, down, status)");
  });
});
