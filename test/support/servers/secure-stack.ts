import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The secured stack (scripts/stack.sh --secure: SASL_SSL + mutual-TLS Kafka, Elasticsearch
 * with x-pack security over https, Redis with a password over TLS), for the test files that
 * need it. The first file that asks brings it up; it then stays up for the rest of the run and
 * the global teardown stops it, if this run started it: one start per run, and the stack is
 * left as it was found.
 */
export interface SecureStack {
  readonly kafka: {
    /** SASL_SSL listener (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512). */
    readonly saslSsl: string;
    /** SSL listener that requires a client certificate. */
    readonly mtls: string;
    readonly user: string;
    readonly password: string;
    /** Authenticates, but may do nothing (no ACLs). */
    readonly limitedUser: string;
    readonly limitedPassword: string;
  };
  readonly elasticsearch: {
    readonly node: string;
    /** Encoded API key of the writer user. */
    readonly apiKey: string;
    readonly user: string;
    readonly password: string;
    /** Read-only user, for the missing-privilege case. */
    readonly readerUser: string;
    readonly readerPassword: string;
    readonly adminUser: string;
    readonly adminPassword: string;
  };
  readonly redis: {
    /** redis://host:port with a password (no credentials in these URLs). */
    readonly plain: string;
    readonly tls: string;
    readonly password: string;
  };
  /** Paths (the stack's files) and PEM texts. */
  readonly certs: {
    readonly caFile: string;
    readonly ca: string;
    readonly clientCertFile: string;
    readonly clientKeyFile: string;
  };
  /** The worker settings the stack writes (`.stack/secure/env`): secrets as *_FILE paths. */
  readonly env: Readonly<Record<string, string>>;
  /** Every secret value, for the tests that grep output for them. */
  readonly secrets: readonly string[];
}

const repo = process.cwd();
const stateDir = process.env.RXINGEST_STACK_DIR ?? join(repo, '.stack');
const secureDir = process.env.RXINGEST_SECURE_STACK_DIR ?? join(stateDir, 'secure');
/** Outside the secure folder: `up` wipes that folder. */
const ownerFile = join(stateDir, 'secure-stack-owner');

const stack = (...args: string[]) =>
  run('bash', ['scripts/stack.sh', ...args, '--secure'], {
    cwd: repo,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 15 * 60_000,
    env: { ...process.env, RXINGEST_STACK_MODE: 'native' },
  });

async function isUp(): Promise<boolean> {
  try {
    await stack('status');
    return existsSync(join(secureDir, 'stack.json'));
  } catch {
    return false;
  }
}

function load(): SecureStack {
  const j = JSON.parse(readFileSync(join(secureDir, 'stack.json'), 'utf8'));
  const read = (p: string) => readFileSync(p, 'utf8');
  const env: Record<string, string> = {};
  for (const line of read(j.envFile).split('\n')) {
    const m = line.match(/^([A-Z_]+)=(.*)$/);
    if (m) env[m[1]!] = m[2]!;
  }
  const s: SecureStack = {
    kafka: {
      saslSsl: j.kafka.saslSsl,
      mtls: j.kafka.mtls,
      user: j.kafka.user,
      password: read(j.kafka.passwordFile),
      limitedUser: j.kafka.limitedUser,
      limitedPassword: read(j.kafka.limitedPasswordFile),
    },
    elasticsearch: {
      node: j.elasticsearch.node,
      apiKey: read(j.elasticsearch.apiKeyFile),
      user: j.elasticsearch.user,
      password: read(j.elasticsearch.passwordFile),
      readerUser: j.elasticsearch.readerUser,
      readerPassword: read(j.elasticsearch.readerPasswordFile),
      adminUser: j.elasticsearch.adminUser,
      adminPassword: read(j.elasticsearch.adminPasswordFile),
    },
    redis: { plain: j.redis.plain, tls: j.redis.tls, password: read(j.redis.passwordFile) },
    certs: {
      caFile: j.certs.ca,
      ca: read(j.certs.ca),
      clientCertFile: j.certs.clientCert,
      clientKeyFile: j.certs.clientKey,
    },
    env,
    secrets: [],
  };
  const apiKeyParts = Buffer.from(s.elasticsearch.apiKey, 'base64').toString('utf8').split(':');
  return {
    ...s,
    secrets: [
      s.kafka.password,
      s.kafka.limitedPassword,
      s.elasticsearch.apiKey,
      apiKeyParts[1] ?? '',
      s.elasticsearch.password,
      s.elasticsearch.readerPassword,
      s.elasticsearch.adminPassword,
      s.redis.password,
    ].filter((x) => x.length >= 8),
  };
}

/** The secured stack, brought up if it is not running (and then stopped by the global teardown). */
export async function secureStack(): Promise<SecureStack> {
  if (!(await isUp())) {
    try {
      await stack('up');
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`the secured stack could not start:\n${e.stderr ?? e.message}`);
    }
    // Only a run that the global setup marked may own it; without one (a file run on its
    // own by hand) it stays up for the next run.
    const runId = process.env.RXINGEST_TEST_RUN;
    if (runId) writeFileSync(ownerFile, runId);
  }
  return load();
}

/** Global teardown: stops the secured stack if this run started it. */
export async function stopSecureStackIfStartedBy(runId: string): Promise<void> {
  if (!existsSync(ownerFile) || readFileSync(ownerFile, 'utf8') !== runId) return;
  await stack('down');
  rmSync(ownerFile, { force: true });
}

/** A CA (PEM) that signed none of the stack's certificates: the "unknown CA" case. */
export async function otherCa(): Promise<{ file: string; pem: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'rxingest-other-ca-'));
  const file = join(dir, 'ca.crt');
  await run('openssl', [
    'req',
    '-x509',
    '-new',
    '-noenc',
    '-newkey',
    'rsa:2048',
    '-days',
    '1',
    '-subj',
    '/CN=some other CA',
    '-keyout',
    join(dir, 'ca.key'),
    '-out',
    file,
  ]);
  return { file, pem: readFileSync(file, 'utf8') };
}

/** kcat options for the secured Kafka's SASL_SSL listener (the tests' independent reader). */
export const kcatSecureOptions = (s: SecureStack): string[] => [
  '-X',
  'security.protocol=SASL_SSL',
  '-X',
  'sasl.mechanisms=SCRAM-SHA-512',
  '-X',
  `sasl.username=${s.kafka.user}`,
  '-X',
  `sasl.password=${s.kafka.password}`,
  '-X',
  `ssl.ca.location=${s.certs.caFile}`,
];
