import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { stackEnv } from '../../../harness/stack.js';
import { planWorkload } from '../../../src/generator/workload.js';
import { runCli } from '../../support/deployments/tool-deployment.js';
import { type EngineServer, startEngine } from '../../support/engines/engine-server.js';

const engine = { product: 'opensearch', major: 2, version: '2.19.4' } as const;

/**
 * OpenSearch with its security plugin (TLS with the plugin's demo CA, basic auth): the worker
 * and reconcile with ES_USERNAME/ES_PASSWORD and ES_CA_CERT, and the start refused in one
 * line, without the secret, for a wrong password or an unknown CA.
 */
describe('OpenSearch 2.19.4 with its security plugin (compatibility run)', () => {
  let server: EngineServer | undefined;
  const credentials = () => ({
    ES_NODE: server!.url,
    ES_USERNAME: 'admin',
    ES_PASSWORD: server!.password!,
    ES_CA_CERT: server!.caFile!,
  });

  beforeAll(async () => {
    server = await startEngine({ engine, port: 19440, secure: true });
    console.info(`secured OpenSearch up on ${server.url} in ${server.startMs} ms`);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a worker and reconcile with user, password and CA reach the contract state', async () => {
    const p = await Pipeline.create('compat-secured-os2', {
      partitions: 2,
      env: credentials(),
      servers: {
        ...stackEnv,
        esNode: server!.url,
        engine,
        esSecurity: {
          auth: { username: 'admin', password: server!.password! },
          caCert: readFileSync(server!.caFile!, 'utf8'),
        },
      },
    });
    try {
      const worker = p.spawn('worker');
      await p.produce(
        planWorkload({ seed: 52, count: 1_000, ratePerSec: 5_000, clients: 40, poisonShare: 0.01 }),
      );
      await p.waitForEnd();
      await p.assertContract(p.expected());
      const rec = await runCli(['reconcile', '--json'], p.env);
      expect(rec.code, rec.stderr).toBe(0);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      await p.cleanup();
    }
  });

  it('a wrong password or an unknown CA stops the start with one line naming the server, without the secret', async () => {
    const base = { ...credentials(), HTTP_PORT: '0', INGEST_TOPICS: 'compat-secured-unused' };
    const wrong = await runCli(['worker'], { ...base, ES_PASSWORD: 'Wrong-Passw0rd-x1' });
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr.trim().split('\n').at(-1)).toBe(
      `rxingest: could not start: Elasticsearch at ${server!.url}: authentication with user "admin" (ES_USERNAME/ES_PASSWORD) failed (401): wrong, expired or revoked credentials`,
    );
    expect(wrong.stdout + wrong.stderr).not.toContain('Wrong-Passw0rd-x1');

    const { ES_CA_CERT: _ca, ...withoutCa } = base;
    const untrusted = await runCli(['worker'], withoutCa);
    expect(untrusted.code).not.toBe(0);
    expect(untrusted.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^rxingest: could not start: Elasticsearch at ${server!.url.replace(/\./g, '\\.')}: TLS: the server's certificate is not trusted .*; set ES_CA_CERT`,
      ),
    );
  });
});
