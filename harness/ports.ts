/** Loopback ports for the servers the tests, the benchmarks and the scripts start. */
import { once } from 'node:events';
import { createServer } from 'node:net';

/** A loopback port nobody listens on right now, for a server about to be started on it. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', resolve);
  });
  const { port } = s.address() as { port: number };
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  try {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return true;
  } catch {
    return false;
  } finally {
    if (server.listening) {
      server.close();
      await once(server, 'close');
    }
  }
}

/**
 * The first port from `from` on which nothing listens on 127.0.0.1: for a server whose port
 * should be easy to recognise (a private Kafka from 9192, an extra Elasticsearch from 9210).
 */
export async function freePortFrom(from: number): Promise<number> {
  for (let p = from; p < from + 100; p++) if (await portIsFree(p)) return p;
  throw new Error(`no free port in ${from}-${from + 99}`);
}
