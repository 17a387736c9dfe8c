import { once } from 'node:events';
import {
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';

/** What the proxy does with each request. */
type Mode =
  | { readonly kind: 'forward' }
  /** Answers `status` without forwarding: a gateway with no healthy node behind it. */
  | { readonly kind: 'refuse'; readonly status: number }
  /** Forwards, lets the node do the work, then answers `status` instead of its answer (paths ending with `suffix`). */
  | { readonly kind: 'lose-answer'; readonly status: number; readonly suffix: string }
  /** Forwards each request whose path ends with `suffix` only after `ms`: a cluster slow to answer. */
  | { readonly kind: 'delay'; readonly ms: number; readonly suffix: string };

/**
 * An HTTP proxy in front of a real Elasticsearch that a test can make answer 5xx for a
 * while, as a load balancer or gateway in front of a cluster does: a real node rarely
 * answers 5xx on demand. `refuse(503)` answers every request itself, forwarding nothing;
 * `loseAnswers(502, '/_bulk')` forwards every request and replaces the node's answer to
 * each bulk (the writes happened, the client never hears of them); `delay(1000, '/_bulk')`
 * forwards each bulk a second late (a slow cluster that still answers); `forward()` passes
 * everything through again.
 * `made` counts the answers it made up, by request path (`_bulk`, `_mget`, …).
 */
export class HttpFaultProxy {
  private mode: Mode = { kind: 'forward' };
  private server: Server | undefined;
  readonly made = new Map<string, number>();
  /** Requests held back by `delay`, by request path. */
  readonly delayed = new Map<string, number>();

  private constructor(private readonly target: URL) {}

  static async to(url: string): Promise<HttpFaultProxy> {
    const proxy = new HttpFaultProxy(new URL(url));
    const server = createServer((req, res) => proxy.handle(req, res));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    proxy.server = server;
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as { port: number }).port}`;
  }

  refuse(status: number): void {
    this.mode = { kind: 'refuse', status };
  }

  /** From now on, the answers to requests whose path ends with `suffix` (all when omitted) are lost. */
  loseAnswers(status: number, suffix = ''): void {
    this.mode = { kind: 'lose-answer', status, suffix };
  }

  /** From now on, requests whose path ends with `suffix` (all when omitted) reach the node `ms` late. */
  delay(ms: number, suffix = ''): void {
    this.mode = { kind: 'delay', ms, suffix };
  }

  forward(): void {
    this.mode = { kind: 'forward' };
  }

  /** Requests held back so far whose path ends with `suffix` (all when omitted). */
  delayedFor(suffix = ''): number {
    let n = 0;
    for (const [path, count] of this.delayed) if (path.endsWith(suffix)) n += count;
    return n;
  }

  /** Made-up answers so far for requests whose path ends with `suffix` (all when omitted). */
  madeFor(suffix = ''): number {
    let n = 0;
    for (const [path, count] of this.made) if (path.endsWith(suffix)) n += count;
    return n;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const mode = this.mode;
    const path = (req.url ?? '/').split('?')[0]!;
    if (mode.kind === 'refuse') {
      req.resume();
      req.once('end', () => this.answer(res, path, mode.status));
      return;
    }
    if (mode.kind === 'delay' && path.endsWith(mode.suffix)) {
      this.delayed.set(path, (this.delayed.get(path) ?? 0) + 1);
      req.pause();
      setTimeout(() => this.forwardRequest(req, res, path, { kind: 'forward' }), mode.ms);
      return;
    }
    this.forwardRequest(req, res, path, mode);
  }

  private forwardRequest(req: IncomingMessage, res: ServerResponse, path: string, mode: Mode): void {
    const upstream = request(
      {
        host: this.target.hostname,
        port: this.target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        // A fresh connection per request: a kept-alive one the node has just closed would
        // fail the request here, and the client would see a fault that no test asked for.
        agent: false,
      },
      (answer) => {
        if (mode.kind === 'lose-answer' && path.endsWith(mode.suffix)) {
          answer.resume();
          answer.once('end', () => this.answer(res, path, mode.status));
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once('error', () => res.destroy());
    req.pipe(upstream);
  }

  /** A gateway's answer: a JSON error for 503 (as a proxy in front of a cluster words it), HTML otherwise. */
  private answer(res: ServerResponse, path: string, status: number): void {
    this.made.set(path, (this.made.get(path) ?? 0) + 1);
    const json = status === 503;
    const text = `${status} ${STATUS_CODES[status] ?? ''}`;
    const body = json
      ? JSON.stringify({ error: { type: 'proxy_exception', reason: 'no healthy upstream' }, status })
      : `<html><head><title>${text}</title></head><body><center><h1>${text}</h1></center></body></html>\n`;
    res.writeHead(status, { 'content-type': json ? 'application/json' : 'text/html' });
    res.end(body);
  }
}
