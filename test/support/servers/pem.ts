import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Throw-away PEM material made with openssl for a test (never committed): a CA, a client pair, a stray key. */
export interface TestPems {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  readonly otherKey: string;
  readonly encryptedKey: string;
}

export function makeTestPems(): TestPems {
  const dir = mkdtempSync(join(tmpdir(), 'rxingest-pem-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    const f = (n: string) => join(dir, n);
    ssl(
      'req',
      '-x509',
      '-new',
      '-noenc',
      '-newkey',
      'rsa:2048',
      '-days',
      '1',
      '-subj',
      '/CN=test CA',
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.crt'),
    );
    ssl(
      'req',
      '-new',
      '-noenc',
      '-newkey',
      'rsa:2048',
      '-subj',
      '/CN=test client',
      '-keyout',
      f('c.key'),
      '-out',
      f('c.csr'),
    );
    ssl(
      'x509',
      '-req',
      '-in',
      f('c.csr'),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-out',
      f('c.crt'),
    );
    ssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', f('other.key'));
    ssl('pkey', '-in', f('other.key'), '-aes256', '-passout', 'pass:secret-pass', '-out', f('enc.key'));
    const read = (n: string) => readFileSync(f(n), 'utf8');
    return {
      ca: read('ca.crt'),
      cert: read('c.crt'),
      key: read('c.key'),
      otherKey: read('other.key'),
      encryptedKey: read('enc.key'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
