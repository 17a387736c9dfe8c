import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/** A TCP socket a process listens on. */
export interface ListeningSocket {
  /** e.g. 0.0.0.0, 127.0.0.1, :: */
  readonly address: string;
  readonly port: number;
}

/**
 * The TCP sockets a process listens on (Linux): its socket inodes (/proc/<pid>/fd) found in
 * the kernel's LISTEN entries of its network namespace (/proc/<pid>/net/tcp and tcp6).
 */
export function listeningSockets(pid: number): ListeningSocket[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const out: ListeningSocket[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9]!)) continue;
      const [hex, port] = f[1]!.split(':') as [string, string];
      out.push({ address: hex.length === 8 ? ipv4(hex) : ipv6(hex), port: Number.parseInt(port, 16) });
    }
  }
  return out;
}

/** /proc's IPv4 address: the 4 bytes in host (little-endian) order. */
const ipv4 = (hex: string) =>
  [3, 2, 1, 0].map((i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');

/** /proc's IPv6 address: four 32-bit words, each in host order; `::` for all zeros. */
function ipv6(hex: string): string {
  const bytes: number[] = [];
  for (let w = 0; w < 4; w++)
    for (const i of [3, 2, 1, 0])
      bytes.push(Number.parseInt(hex.slice(w * 8 + i * 2, w * 8 + i * 2 + 2), 16));
  if (bytes.every((b) => b === 0)) return '::';
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(':');
}

/**
 * Fails with a clear message unless `port` is free on every address (a test of the default
 * port must not blame the worker for someone else's listener).
 */
export async function assertPortFree(port: number, why: string): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '0.0.0.0', () => resolve());
    });
  } catch (err) {
    throw new Error(
      `port ${port} is in use on this machine (${(err as NodeJS.ErrnoException).code}), so ${why} cannot be tested: stop what listens there (ss -ltnp 'sport = :${port}')`,
    );
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
