import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { EventLoopHeartbeat, type HeartbeatOptions } from './event-loop-heartbeat.js';
import type { ReadinessReport } from './readiness.js';

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  /** Prometheus text (a prom-client Registry fits). */
  readonly metrics: { readonly contentType: string; metrics(): Promise<string> };
  readonly readiness: { report(): ReadinessReport };
  readonly log: Logger;
  readonly heartbeat?: HeartbeatOptions;
}

export interface HttpServerHandle {
  /** e.g. http://127.0.0.1:9464 (a wildcard host is shown as 127.0.0.1). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** The address is taken: the start stops with this one line. */
export class HttpAddressInUseError extends Error {
  override name = 'HttpAddressInUseError';
}

/**
 * The worker's one HTTP server (contract, "Operating it"):
 *
 * - `GET /metrics`: Prometheus text;
 * - `GET /healthz`: 200 while the process is alive and its event loop turns
 *   (a heartbeat timer, see EventLoopHeartbeat), 503 right after a stall;
 * - `GET /readyz`: 200 once the worker has joined its group and reaches
 *   Elasticsearch and Kafka, else 503 with `{ ready: false, reason, checks }`.
 *
 * Answers come from state the worker keeps; no request waits on another server.
 */
export async function startHttpServer(o: HttpServerOptions): Promise<HttpServerHandle> {
  const heartbeat = new EventLoopHeartbeat(o.heartbeat).start();
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      o.log.error({ err, path: req.url }, 'HTTP request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  });
  server.keepAliveTimeout = 5_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    switch (path) {
      case '/metrics': {
        const text = await o.metrics.metrics();
        res.writeHead(200, { 'content-type': o.metrics.contentType }).end(req.method === 'HEAD' ? '' : text);
        return;
      }
      case '/healthz': {
        const s = heartbeat.status();
        json(res, s.alive ? 200 : 503, {
          status: s.alive ? 'ok' : 'stalled',
          eventLoopLagMs: Math.round(s.lagMs),
          ...(s.reason ? { reason: s.reason } : {}),
        });
        return;
      }
      case '/readyz': {
        const r = o.readiness.report();
        json(res, r.ready ? 200 : 503, r);
        return;
      }
      default:
        res
          .writeHead(404, { 'content-type': 'text/plain' })
          .end('not found: try /metrics, /healthz or /readyz\n');
    }
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port, o.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    heartbeat.stop();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new HttpAddressInUseError(
        `HTTP_HOST:HTTP_PORT ${o.host}:${o.port} is already in use (another rxingest worker?): ` +
          'choose another HTTP_PORT, or 0 to turn the HTTP server off',
      );
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EACCES') {
      throw new Error(`HTTP_HOST:HTTP_PORT ${o.host}:${o.port} cannot be listened on (${code})`);
    }
    throw err;
  }
  server.on('error', (err) => o.log.error({ err }, 'HTTP server error'));
  const { port } = server.address() as AddressInfo;
  const shown = o.host === '0.0.0.0' || o.host === '::' || o.host === '' ? '127.0.0.1' : o.host;
  const url = `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        heartbeat.stop();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res
    .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    .end(`${JSON.stringify(body)}\n`);
}
