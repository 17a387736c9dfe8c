import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from './config-error.js';
import { redactUrl } from './redact-url.js';
import { bool } from './setting-types.js';

/**
 * Secured connections (contract, "Running it"): TLS and SASL for Kafka, an API key or a
 * user and a CA for Elasticsearch, a CA for Redis (its password is in REDIS_URL).
 *
 * Secrets: KAFKA_SASL_PASSWORD, KAFKA_SSL_KEY (when it holds the PEM text), ES_API_KEY,
 * ES_PASSWORD, and the credentials in REDIS_URL and ES_NODE. No message shows them: a bad
 * secret is named, never echoed; a URL is shown with its credentials stripped.
 *
 * Certificates (KAFKA_SSL_CA, KAFKA_SSL_CERT, KAFKA_SSL_KEY, ES_CA_CERT, REDIS_CA_CERT) take
 * either a path to a PEM file or the PEM text itself (what starts with "-----BEGIN").
 */

export type KafkaSaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

/** PEM texts, read and checked at start. */
export interface KafkaTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface KafkaSasl {
  readonly mechanism: KafkaSaslMechanism;
  readonly username: string;
  readonly password: string;
}

export interface KafkaSecurity {
  /** Undefined: plaintext. */
  readonly ssl?: KafkaTls;
  /** Undefined: no SASL. */
  readonly sasl?: KafkaSasl;
}

export type ElasticsearchAuth =
  | { readonly apiKey: string }
  | { readonly username: string; readonly password: string };

export interface ElasticsearchSecurity {
  readonly auth?: ElasticsearchAuth;
  /** PEM text of the CA(s) that signed the server's certificate. */
  readonly caCert?: string;
}

export interface RedisSecurity {
  readonly caCert?: string;
}

/** Variables that may instead come from a file named by `<NAME>_FILE` (Docker/Kubernetes secrets). */
export const FILE_VARIABLES = [
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_SSL_KEY',
  'ES_USERNAME',
  'ES_PASSWORD',
  'ES_API_KEY',
  'REDIS_URL',
] as const;

/** Variables whose value is never shown (REDIS_URL and ES_NODE are shown without credentials). */
export const SECRET_VARIABLES = new Set(['KAFKA_SASL_PASSWORD', 'ES_API_KEY', 'ES_PASSWORD']);

/** The secured-connection variables and what they take, for `--help` (all off unless set). */
export const securityVariables: Record<string, string> = {
  KAFKA_SSL: 'true: TLS to the brokers [false]',
  KAFKA_SSL_CA: 'CA certificate(s) (a path or PEM text)',
  KAFKA_SSL_CERT: 'client certificate, for mutual TLS (a path or PEM text)',
  KAFKA_SSL_KEY: 'its unencrypted private key (a path or PEM text; secret)',
  KAFKA_SASL_MECHANISM: 'plain, scram-sha-256 or scram-sha-512',
  KAFKA_SASL_USERNAME: 'SASL user',
  KAFKA_SASL_PASSWORD: 'SASL password (secret)',
  ES_API_KEY: 'the encoded API key (secret)',
  ES_USERNAME: 'Basic auth user (instead of ES_API_KEY)',
  ES_PASSWORD: 'Basic auth password (secret)',
  ES_CA_CERT: 'CA certificate(s) for an https:// ES_NODE (a path or PEM text)',
  REDIS_CA_CERT: 'CA certificate(s) for a rediss:// REDIS_URL (a path or PEM text)',
};

type Env = Readonly<Record<string, string | undefined>>;
type Read = (path: string) => string;

const defaultRead: Read = (p) => readFileSync(p, 'utf8');
const given = (env: Env, name: string) => {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
};

/** How a value may be shown in a message: secrets never, URLs without credentials. */
export function showValue(name: string, value: string): string {
  if (SECRET_VARIABLES.has(name)) return `${name} (value hidden)`;
  if (name === 'KAFKA_SSL_KEY' && isPem(value)) return `${name} (PEM text, hidden)`;
  if (name === 'REDIS_URL' || name === 'ES_NODE') return `${name}=${JSON.stringify(redactUrl(value))}`;
  return `${name}=${JSON.stringify(value)}`;
}

const fsReason = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT'
    ? 'no such file'
    : code === 'EACCES'
      ? 'permission denied'
      : code === 'EISDIR'
        ? 'a directory, not a file'
        : (code ?? 'unreadable');
};

/**
 * Replaces each `<NAME>_FILE` by the file's content as `<NAME>` (one trailing line break
 * dropped, as secret files usually end with one). Setting both is an error. Idempotent.
 */
export function resolveSecretFiles(env: Env, read: Read = defaultRead): Env {
  const out: Record<string, string | undefined> = { ...env };
  for (const name of FILE_VARIABLES) {
    const file = given(env, `${name}_FILE`);
    if (file === undefined) continue;
    if (given(env, name) !== undefined) {
      throw new ConfigError(`${name} and ${name}_FILE are both set: expected one of them`);
    }
    delete out[`${name}_FILE`];
    // KAFKA_SSL_KEY takes a path anyway: its _FILE variant is that path.
    if (name === 'KAFKA_SSL_KEY') {
      out[name] = file;
      continue;
    }
    let text: string;
    try {
      text = read(file);
    } catch (err) {
      throw new ConfigError(
        `${name}_FILE=${JSON.stringify(file)} is invalid: expected a readable file (${fsReason(err)})`,
      );
    }
    const value = text.replace(/\r?\n$/, '');
    if (value.trim() === '') {
      throw new ConfigError(`${name}_FILE=${JSON.stringify(file)} is invalid: expected a non-empty file`);
    }
    out[name] = value;
  }
  return out;
}

const isPem = (s: string) => s.trimStart().startsWith('-----BEGIN ');

/** PEM text from a variable that holds a path or the text (with real or `\n`-escaped line breaks). */
function pemFrom(name: string, value: string, read: Read): string {
  if (isPem(value)) return value.includes('\n') ? value : value.replace(/\\n/g, '\n');
  try {
    return read(value);
  } catch (err) {
    throw new ConfigError(
      `${name}=${JSON.stringify(value)} is invalid: expected a PEM file's path or PEM text (${fsReason(err)})`,
    );
  }
}

function certificates(name: string, value: string, read: Read): string {
  const pem = pemFrom(name, value, read);
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const invalid = () =>
    new ConfigError(`${showValue(name, value)} is invalid: expected one or more PEM certificates`);
  if (blocks.length === 0) throw invalid();
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch {
      throw invalid();
    }
  }
  return pem;
}

function privateKey(value: string, read: Read): string {
  const pem = pemFrom('KAFKA_SSL_KEY', value, read);
  const shown = showValue('KAFKA_SSL_KEY', value);
  if (/ENCRYPTED/.test(pem)) {
    throw new ConfigError(`${shown} is invalid: expected an unencrypted PEM private key (it is encrypted)`);
  }
  try {
    createPrivateKey(pem);
  } catch {
    throw new ConfigError(`${shown} is invalid: expected a PEM private key`);
  }
  return pem;
}

const mechanism = z.enum(['plain', 'scram-sha-256', 'scram-sha-512']);
export function loadKafkaSecurity(envIn: Env, read: Read = defaultRead): KafkaSecurity {
  const env = resolveSecretFiles(envIn, read);
  const sslRaw = given(env, 'KAFKA_SSL')?.trim().toLowerCase() ?? 'false';
  if (!bool.safeParse(sslRaw).success) {
    throw new ConfigError(`KAFKA_SSL=${JSON.stringify(env.KAFKA_SSL)} is invalid: expected true or false`);
  }
  const sslOn = sslRaw === 'true' || sslRaw === '1';
  const tlsFiles = ['KAFKA_SSL_CA', 'KAFKA_SSL_CERT', 'KAFKA_SSL_KEY'] as const;
  if (!sslOn) {
    const stray = tlsFiles.find((n) => given(env, n) !== undefined);
    if (stray) {
      throw new ConfigError(
        `${stray} is set but KAFKA_SSL is not true: expected KAFKA_SSL=true to connect to Kafka with TLS`,
      );
    }
  }
  let ssl: KafkaTls | undefined;
  if (sslOn) {
    const ca = given(env, 'KAFKA_SSL_CA');
    const cert = given(env, 'KAFKA_SSL_CERT');
    const key = given(env, 'KAFKA_SSL_KEY');
    if ((cert === undefined) !== (key === undefined)) {
      throw new ConfigError(
        `${cert === undefined ? 'KAFKA_SSL_KEY' : 'KAFKA_SSL_CERT'} is set without ${cert === undefined ? 'KAFKA_SSL_CERT' : 'KAFKA_SSL_KEY'}: expected both (the client certificate and its key) or neither`,
      );
    }
    const tls: { ca?: string; cert?: string; key?: string } = {};
    if (ca !== undefined) tls.ca = certificates('KAFKA_SSL_CA', ca, read);
    if (cert !== undefined && key !== undefined) {
      tls.cert = certificates('KAFKA_SSL_CERT', cert, read);
      tls.key = privateKey(key, read);
      const x509 = new X509Certificate(tls.cert);
      if (!x509.checkPrivateKey(createPrivateKey(tls.key))) {
        throw new ConfigError(
          `${showValue('KAFKA_SSL_KEY', key)} is invalid: expected the private key of the certificate in KAFKA_SSL_CERT`,
        );
      }
    }
    ssl = tls;
  }

  const mech = given(env, 'KAFKA_SASL_MECHANISM');
  const username = given(env, 'KAFKA_SASL_USERNAME');
  const password = given(env, 'KAFKA_SASL_PASSWORD');
  if (mech === undefined) {
    if (username !== undefined || password !== undefined) {
      const which = username !== undefined ? 'KAFKA_SASL_USERNAME' : 'KAFKA_SASL_PASSWORD';
      throw new ConfigError(
        `${which} is set but KAFKA_SASL_MECHANISM is not: expected KAFKA_SASL_MECHANISM=plain, scram-sha-256 or scram-sha-512`,
      );
    }
    return ssl === undefined ? {} : { ssl };
  }
  const m = mechanism.safeParse(mech.trim().toLowerCase());
  if (!m.success) {
    throw new ConfigError(
      `KAFKA_SASL_MECHANISM=${JSON.stringify(mech)} is invalid: expected one of plain, scram-sha-256, scram-sha-512`,
    );
  }
  if (username === undefined || password === undefined) {
    throw new ConfigError(
      `KAFKA_SASL_MECHANISM=${m.data} needs ${username === undefined ? 'KAFKA_SASL_USERNAME' : 'KAFKA_SASL_PASSWORD'} (or its _FILE variant): expected a user name and a password`,
    );
  }
  const sasl = { mechanism: m.data, username, password };
  return ssl === undefined ? { sasl } : { ssl, sasl };
}

export function loadElasticsearchSecurity(
  envIn: Env,
  node: string,
  read: Read = defaultRead,
): ElasticsearchSecurity {
  const env = resolveSecretFiles(envIn, read);
  const apiKey = given(env, 'ES_API_KEY');
  const username = given(env, 'ES_USERNAME');
  const password = given(env, 'ES_PASSWORD');
  const ca = given(env, 'ES_CA_CERT');
  if (apiKey !== undefined && (username !== undefined || password !== undefined)) {
    throw new ConfigError(
      'ES_API_KEY and ES_USERNAME/ES_PASSWORD are both set: expected one way to authenticate to Elasticsearch',
    );
  }
  if ((username === undefined) !== (password === undefined)) {
    throw new ConfigError(
      `${username === undefined ? 'ES_PASSWORD' : 'ES_USERNAME'} is set without ${username === undefined ? 'ES_USERNAME' : 'ES_PASSWORD'}: expected both`,
    );
  }
  if (apiKey !== undefined && /\s/.test(apiKey.trim())) {
    throw new ConfigError(
      'ES_API_KEY (value hidden) is invalid: expected the encoded API key (one word, as the create API key answer gives it in "encoded")',
    );
  }
  if (ca !== undefined && !node.toLowerCase().startsWith('https:')) {
    throw new ConfigError(
      `ES_CA_CERT is set but ES_NODE=${JSON.stringify(redactUrl(node))} is not https: expected an https:// node`,
    );
  }
  const out: { auth?: ElasticsearchAuth; caCert?: string } = {};
  if (apiKey !== undefined) out.auth = { apiKey: apiKey.trim() };
  else if (username !== undefined && password !== undefined) out.auth = { username, password };
  if (ca !== undefined) out.caCert = certificates('ES_CA_CERT', ca, read);
  return out;
}

export function loadRedisSecurity(envIn: Env, url: string, read: Read = defaultRead): RedisSecurity {
  const ca = given(envIn, 'REDIS_CA_CERT');
  if (ca === undefined) return {};
  if (!url.toLowerCase().startsWith('rediss:')) {
    throw new ConfigError(
      `REDIS_CA_CERT is set but REDIS_URL=${JSON.stringify(redactUrl(url))} is not rediss://: expected a rediss:// URL (TLS)`,
    );
  }
  return { caCert: certificates('REDIS_CA_CERT', ca, read) };
}
