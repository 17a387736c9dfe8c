import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';
import { FILE_VARIABLES, securityVariables } from '../../../src/config/security.js';
import { makeTestPems, type TestPems } from '../../support/servers/pem.js';

/** A fake file system: the named files, ENOENT for anything else. */
const filesystem =
  (files: Record<string, string>) =>
  (p: string): string => {
    if (p in files) return files[p]!;
    throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
  };

/** The ConfigError `fn` throws (one line), or a failure. */
function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const { message } = err as ConfigError;
    expect(message).not.toMatch(/[\r\n\u2028\u2029]/);
    return message;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

const SECRET = 's3cr3t-Value-42';
let pem: TestPems;
let files: Record<string, string>;
let read: (p: string) => string;
const load = (env: Record<string, string>) => loadConfig(env, read);

beforeAll(() => {
  pem = makeTestPems();
  files = {
    '/run/ca.pem': pem.ca,
    '/run/client.crt': pem.cert,
    '/run/client.key': pem.key,
    '/run/other.key': pem.otherKey,
    '/run/enc.key': pem.encryptedKey,
    '/run/garbage.pem': 'hello',
    '/run/secrets/password': `${SECRET}\n`,
    '/run/secrets/user': 'svc-user\n',
    '/run/secrets/empty': '\n',
    '/run/secrets/api-key': `${Buffer.from(`id1:${SECRET}`).toString('base64')}\n`,
    '/run/secrets/redis-url': `rediss://:${SECRET}@redis.example:6380\n`,
  };
  read = filesystem(files);
});

describe('secured connections: defaults', () => {
  it('are off when nothing is set', () => {
    const c = load({});
    expect(c.kafka.ssl).toBeUndefined();
    expect(c.kafka.sasl).toBeUndefined();
    expect(c.elasticsearch.auth).toBeUndefined();
    expect(c.elasticsearch.caCert).toBeUndefined();
    expect(c.redis.caCert).toBeUndefined();
  });
});

describe('Kafka TLS', () => {
  it('KAFKA_SSL=true alone: TLS with the system CAs', () => {
    expect(load({ KAFKA_SSL: 'true' }).kafka.ssl).toEqual({});
    expect(load({ KAFKA_SSL: '1' }).kafka.ssl).toEqual({});
    expect(load({ KAFKA_SSL: 'false' }).kafka.ssl).toBeUndefined();
  });

  it('KAFKA_SSL_CA takes a path, PEM text, or PEM text with \\n escapes', () => {
    expect(load({ KAFKA_SSL: 'true', KAFKA_SSL_CA: '/run/ca.pem' }).kafka.ssl?.ca).toBe(pem.ca);
    expect(load({ KAFKA_SSL: 'true', KAFKA_SSL_CA: pem.ca }).kafka.ssl?.ca).toBe(pem.ca);
    const escaped = pem.ca.replace(/\n/g, '\\n');
    expect(load({ KAFKA_SSL: 'true', KAFKA_SSL_CA: escaped }).kafka.ssl?.ca).toBe(pem.ca);
  });

  it('KAFKA_SSL_CERT with KAFKA_SSL_KEY (path, PEM text, or KAFKA_SSL_KEY_FILE) for mutual TLS', () => {
    const base = { KAFKA_SSL: 'true', KAFKA_SSL_CERT: '/run/client.crt' };
    expect(load({ ...base, KAFKA_SSL_KEY: '/run/client.key' }).kafka.ssl).toEqual({
      cert: pem.cert,
      key: pem.key,
    });
    expect(load({ ...base, KAFKA_SSL_KEY: pem.key }).kafka.ssl?.key).toBe(pem.key);
    expect(load({ ...base, KAFKA_SSL_KEY_FILE: '/run/client.key' }).kafka.ssl?.key).toBe(pem.key);
  });

  it.each([
    [{ KAFKA_SSL: 'yes' }, 'KAFKA_SSL="yes" is invalid: expected true or false'],
    [
      { KAFKA_SSL_CA: '/run/ca.pem' },
      'KAFKA_SSL_CA is set but KAFKA_SSL is not true: expected KAFKA_SSL=true to connect to Kafka with TLS',
    ],
    [
      { KAFKA_SSL: 'true', KAFKA_SSL_CA: '/run/missing.pem' },
      `KAFKA_SSL_CA="/run/missing.pem" is invalid: expected a PEM file's path or PEM text (no such file)`,
    ],
    [
      { KAFKA_SSL: 'true', KAFKA_SSL_CA: '/run/garbage.pem' },
      'KAFKA_SSL_CA="/run/garbage.pem" is invalid: expected one or more PEM certificates',
    ],
    [
      { KAFKA_SSL: 'true', KAFKA_SSL_CERT: '/run/client.crt' },
      'KAFKA_SSL_CERT is set without KAFKA_SSL_KEY: expected both (the client certificate and its key) or neither',
    ],
    [
      { KAFKA_SSL: 'true', KAFKA_SSL_KEY: '/run/client.key' },
      'KAFKA_SSL_KEY is set without KAFKA_SSL_CERT: expected both (the client certificate and its key) or neither',
    ],
    [
      { KAFKA_SSL: 'true', KAFKA_SSL_CERT: '/run/client.crt', KAFKA_SSL_KEY: '/run/other.key' },
      'KAFKA_SSL_KEY="/run/other.key" is invalid: expected the private key of the certificate in KAFKA_SSL_CERT',
    ],
    [
      { KAFKA_SSL: 'true', KAFKA_SSL_CERT: '/run/client.crt', KAFKA_SSL_KEY: '/run/enc.key' },
      'KAFKA_SSL_KEY="/run/enc.key" is invalid: expected an unencrypted PEM private key (it is encrypted)',
    ],
  ])('%j: one line', (env, expected) => {
    expect(configError(() => load(env as Record<string, string>))).toBe(expected);
  });

  it('a bad key given as PEM text is not echoed', () => {
    const broken = `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n`;
    const message = configError(() =>
      load({ KAFKA_SSL: 'true', KAFKA_SSL_CERT: '/run/client.crt', KAFKA_SSL_KEY: broken }),
    );
    expect(message).toBe('KAFKA_SSL_KEY (PEM text, hidden) is invalid: expected a PEM private key');
  });
});

describe('Kafka SASL', () => {
  it.each([
    ['plain', 'plain'],
    ['scram-sha-256', 'scram-sha-256'],
    ['SCRAM-SHA-512', 'scram-sha-512'],
  ])('KAFKA_SASL_MECHANISM=%s', (given, mechanism) => {
    const c = load({ KAFKA_SASL_MECHANISM: given, KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: SECRET });
    expect(c.kafka.sasl).toEqual({ mechanism, username: 'u', password: SECRET });
  });

  it('user name and password from *_FILE (one trailing line break dropped)', () => {
    const c = load({
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME_FILE: '/run/secrets/user',
      KAFKA_SASL_PASSWORD_FILE: '/run/secrets/password',
    });
    expect(c.kafka.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'svc-user', password: SECRET });
  });

  it('TLS and SASL together (SASL_SSL)', () => {
    const c = load({
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA: '/run/ca.pem',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: SECRET,
    });
    expect(c.kafka.ssl?.ca).toBe(pem.ca);
    expect(c.kafka.sasl?.mechanism).toBe('plain');
  });

  it.each([
    [
      { KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: SECRET },
      'KAFKA_SASL_MECHANISM="gssapi" is invalid: expected one of plain, scram-sha-256, scram-sha-512',
    ],
    [
      { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' },
      'KAFKA_SASL_MECHANISM=plain needs KAFKA_SASL_PASSWORD (or its _FILE variant): expected a user name and a password',
    ],
    [
      { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: SECRET },
      'KAFKA_SASL_MECHANISM=plain needs KAFKA_SASL_USERNAME (or its _FILE variant): expected a user name and a password',
    ],
    [
      { KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: SECRET },
      'KAFKA_SASL_USERNAME is set but KAFKA_SASL_MECHANISM is not: expected KAFKA_SASL_MECHANISM=plain, scram-sha-256 or scram-sha-512',
    ],
    [
      { KAFKA_SASL_PASSWORD: SECRET },
      'KAFKA_SASL_PASSWORD is set but KAFKA_SASL_MECHANISM is not: expected KAFKA_SASL_MECHANISM=plain, scram-sha-256 or scram-sha-512',
    ],
  ])('%j: one line, no secret', (env, expected) => {
    const message = configError(() => load(env as Record<string, string>));
    expect(message).toBe(expected);
    expect(message).not.toContain(SECRET);
  });
});

describe('Elasticsearch', () => {
  it('ES_API_KEY, or from ES_API_KEY_FILE', () => {
    expect(load({ ES_API_KEY: 'abc==' }).elasticsearch.auth).toEqual({ apiKey: 'abc==' });
    expect(load({ ES_API_KEY_FILE: '/run/secrets/api-key' }).elasticsearch.auth).toEqual({
      apiKey: Buffer.from(`id1:${SECRET}`).toString('base64'),
    });
  });

  it('ES_USERNAME/ES_PASSWORD, or from their *_FILE', () => {
    expect(load({ ES_USERNAME: 'u', ES_PASSWORD: SECRET }).elasticsearch.auth).toEqual({
      username: 'u',
      password: SECRET,
    });
    const c = load({ ES_USERNAME_FILE: '/run/secrets/user', ES_PASSWORD_FILE: '/run/secrets/password' });
    expect(c.elasticsearch.auth).toEqual({ username: 'svc-user', password: SECRET });
  });

  it('ES_CA_CERT with an https node', () => {
    const c = load({ ES_NODE: 'https://es.example:9200', ES_CA_CERT: '/run/ca.pem' });
    expect(c.elasticsearch.caCert).toBe(pem.ca);
  });

  it.each([
    [
      { ES_API_KEY: SECRET, ES_USERNAME: 'u', ES_PASSWORD: SECRET },
      'ES_API_KEY and ES_USERNAME/ES_PASSWORD are both set: expected one way to authenticate to Elasticsearch',
    ],
    [{ ES_USERNAME: 'u' }, 'ES_USERNAME is set without ES_PASSWORD: expected both'],
    [{ ES_PASSWORD: SECRET }, 'ES_PASSWORD is set without ES_USERNAME: expected both'],
    [
      { ES_API_KEY: `two ${SECRET}` },
      'ES_API_KEY (value hidden) is invalid: expected the encoded API key (one word, as the create API key answer gives it in "encoded")',
    ],
    [
      { ES_NODE: `http://u:${SECRET}@es.example:9200`, ES_CA_CERT: '/run/ca.pem' },
      'ES_CA_CERT is set but ES_NODE="http://***:***@es.example:9200" is not https: expected an https:// node',
    ],
    [
      { ES_NODE: 'https://es.example', ES_CA_CERT: '/run/garbage.pem' },
      'ES_CA_CERT="/run/garbage.pem" is invalid: expected one or more PEM certificates',
    ],
    [
      { ES_NODE: `ftp://u:${SECRET}@x` },
      'ES_NODE="ftp://***:***@x" is invalid: expected a URL starting with http:// or https://',
    ],
  ])('%j: one line, no secret', (env, expected) => {
    const message = configError(() => load(env as Record<string, string>));
    expect(message).toBe(expected);
    expect(message).not.toContain(SECRET);
  });
});

describe('Redis', () => {
  it('a password in REDIS_URL, or the whole URL from REDIS_URL_FILE, and REDIS_CA_CERT for rediss://', () => {
    expect(load({ REDIS_URL: `redis://:${SECRET}@r:6379` }).redis.url).toBe(`redis://:${SECRET}@r:6379`);
    const c = load({ REDIS_URL_FILE: '/run/secrets/redis-url', REDIS_CA_CERT: '/run/ca.pem' });
    expect(c.redis.url).toBe(`rediss://:${SECRET}@redis.example:6380`);
    expect(c.redis.caCert).toBe(pem.ca);
  });

  it.each([
    [
      { REDIS_URL: `redis://:${SECRET}@r:6379`, REDIS_CA_CERT: '/run/ca.pem' },
      'REDIS_CA_CERT is set but REDIS_URL="redis://:***@r:6379" is not rediss://: expected a rediss:// URL (TLS)',
    ],
    [
      { REDIS_URL: `http://:${SECRET}@r:6379` },
      'REDIS_URL="http://:***@r:6379" is invalid: expected a URL starting with redis:// or rediss://',
    ],
    [
      { REDIS_URL: `rediss://:${SECRET}@r:port` },
      'REDIS_URL="rediss://***@r:port" is invalid: expected a URL starting with redis:// or rediss://',
    ],
  ])('%j: one line, the password stripped', (env, expected) => {
    const message = configError(() => load(env as Record<string, string>));
    expect(message).toBe(expected);
    expect(message).not.toContain(SECRET);
  });
});

describe('*_FILE variants', () => {
  it('exist for every secret and for the user names', () => {
    expect([...FILE_VARIABLES].sort()).toEqual(
      [
        'ES_API_KEY',
        'ES_PASSWORD',
        'ES_USERNAME',
        'KAFKA_SASL_PASSWORD',
        'KAFKA_SASL_USERNAME',
        'KAFKA_SSL_KEY',
        'REDIS_URL',
      ].sort(),
    );
  });

  it.each(FILE_VARIABLES.filter((v) => v !== 'KAFKA_SSL_KEY'))(
    '%s and %s_FILE both set: one line',
    (name) => {
      expect(configError(() => load({ [name]: 'x', [`${name}_FILE`]: '/run/secrets/password' }))).toBe(
        `${name} and ${name}_FILE are both set: expected one of them`,
      );
    },
  );

  it.each(FILE_VARIABLES.filter((v) => v !== 'KAFKA_SSL_KEY'))(
    '%s_FILE unreadable or empty: one line',
    (name) => {
      expect(configError(() => load({ [`${name}_FILE`]: '/run/secrets/nope' }))).toBe(
        `${name}_FILE="/run/secrets/nope" is invalid: expected a readable file (no such file)`,
      );
      expect(configError(() => load({ [`${name}_FILE`]: '/run/secrets/empty' }))).toBe(
        `${name}_FILE="/run/secrets/empty" is invalid: expected a non-empty file`,
      );
    },
  );

  it('a secret from a file is checked like the variable, and not echoed', () => {
    files['/run/secrets/bad-key'] = `two ${SECRET}\n`;
    const message = configError(() => load({ ES_API_KEY_FILE: '/run/secrets/bad-key' }));
    expect(message).toMatch(/^ES_API_KEY \(value hidden\) is invalid/);
  });
});

describe('--help table', () => {
  it('lists every secured-connection variable, each with what it takes', () => {
    expect(Object.keys(securityVariables).sort()).toEqual(
      [
        'ES_API_KEY',
        'ES_CA_CERT',
        'ES_PASSWORD',
        'ES_USERNAME',
        'KAFKA_SASL_MECHANISM',
        'KAFKA_SASL_PASSWORD',
        'KAFKA_SASL_USERNAME',
        'KAFKA_SSL',
        'KAFKA_SSL_CA',
        'KAFKA_SSL_CERT',
        'KAFKA_SSL_KEY',
        'REDIS_CA_CERT',
      ].sort(),
    );
    for (const meaning of Object.values(securityVariables)) expect(meaning.length).toBeGreaterThan(5);
  });
});
