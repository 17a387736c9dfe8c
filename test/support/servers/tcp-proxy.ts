import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * What a protocol-aware proxy does to one connection's bytes: it sees what the client sends
 * (before it is forwarded or held) and may rewrite what the server answers.
 */
export interface ConnectionTap {
  fromClient?(chunk: Buffer): void;
  /** The server's bytes on their way to the client (piped through). */
  readonly toClient?: Duplex;
}

/**
 * A TCP proxy to a real server that a test can shut (the port then refuses
 * connections, and open connections are cut) and open again on the same port:
 * "the server became unreachable" without touching the shared server. It can also hold
 * what clients send (requests hang, connections stay up) and let it through later:
 * "the server stopped answering".
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Duplex>();
  /** While held: what each client sent, not forwarded yet. */
  private held: Map<Socket, { upstream: Socket; chunks: Buffer[] }> | undefined;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
    /** A tap for each new client connection (a protocol-aware proxy); none by default. */
    private readonly tap: () => ConnectionTap = () => ({}),
  ) {}

  static async to(url: string): Promise<TcpProxy> {
    const u = new URL(url);
    const proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.open();
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      const tap = this.tap();
      for (const s of [client, upstream, ...(tap.toClient ? [tap.toClient] : [])]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (chunk: Buffer) => {
        tap.fromClient?.(chunk);
        if (this.held === undefined) {
          if (!upstream.write(chunk)) client.pause();
          return;
        }
        const entry = this.held.get(client) ?? { upstream, chunks: [] };
        entry.chunks.push(chunk);
        this.held.set(client, entry);
      });
      upstream.on('drain', () => client.resume());
      client.on('end', () => upstream.end());
      if (tap.toClient) upstream.pipe(tap.toClient).pipe(client);
      else upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Forwards nothing clients send from now on, until release(). */
  hold(): void {
    this.held ??= new Map();
  }

  /** Sends on what was held, in order, and forwards again. */
  release(): void {
    const held = this.held;
    this.held = undefined;
    for (const { upstream, chunks } of held?.values() ?? []) for (const c of chunks) upstream.write(c);
  }

  /** Refuses new connections and cuts the open ones; returns how many sockets it cut (both ends of each). */
  async shut(): Promise<number> {
    const server = this.server;
    this.server = undefined;
    const cut = this.sockets.size;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    return cut;
  }
}
