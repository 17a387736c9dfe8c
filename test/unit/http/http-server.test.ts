import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HttpAddressInUseError,
  type HttpServerHandle,
  startHttpServer,
} from '../../../src/http/http-server.js';
import { Readiness } from '../../../src/http/readiness.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';
import { capturedLog } from '../../support/logs/captured-log.js';

const open: HttpServerHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function serve(heartbeat = {}) {
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  const readiness = new Readiness({
    joined: 'not yet joined the consumer group "g"',
    elasticsearch: 'e?',
    kafka: 'k?',
  });
  const server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    metrics: metrics.registry,
    readiness,
    log: capturedLog().log,
    heartbeat,
  });
  open.push(server);
  return { server, metrics, readiness };
}

const busyFor = (ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // blocks the event loop, as a runaway synchronous loop would
  }
};

describe('the HTTP server', () => {
  it('serves Prometheus text on /metrics', async () => {
    const { server, metrics } = await serve();
    metrics.recordsIn.inc(5);
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toMatch(/^rxingest_records_in_total 5$/m);
  });

  it('answers /readyz 503 with a JSON reason until every check is ok, then 200', async () => {
    const { server, readiness } = await serve();
    let res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { ready: boolean; reason: string };
    expect(body.ready).toBe(false);
    expect(body.reason).toContain('not yet joined the consumer group "g"');
    for (const c of ['joined', 'elasticsearch', 'kafka'] as const) readiness.set(c, true);
    res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ready: true });
  });

  it('answers /healthz 200 while the event loop turns, and 503 right after it was blocked', async () => {
    const { server } = await serve({ intervalMs: 20, maxLagMs: 200, holdMs: 60_000 });
    let res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok' });
    busyFor(600);
    res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      status: 'stalled',
      reason: expect.stringMatching(/^event loop was blocked for \d+\.\d s$/),
    });
  });

  it('answers 404 elsewhere and 405 to other methods', async () => {
    const { server } = await serve();
    expect((await fetch(`${server.url}/`)).status).toBe(404);
    const post = await fetch(`${server.url}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('refuses to start on an address in use, with one line naming it', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const err = await startHttpServer({
        host: '127.0.0.1',
        port,
        metrics: new WorkerMetrics({ defaultMetrics: false }).registry,
        readiness: new Readiness({ joined: '', elasticsearch: '', kafka: '' }),
        log: capturedLog().log,
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(HttpAddressInUseError);
      expect((err as Error).message).toBe(
        `HTTP_HOST:HTTP_PORT 127.0.0.1:${port} is already in use (another rxingest worker?): ` +
          'choose another HTTP_PORT, or 0 to turn the HTTP server off',
      );
    } finally {
      taken.close();
    }
  });
});
