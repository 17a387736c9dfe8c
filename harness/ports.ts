import { createServer } from 'node:net';

/**
 * A loopback port nobody listens on right now, for a server about to be started on it: the
 * one helper the tests, the benchmarks and the scripts share.
 */
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
