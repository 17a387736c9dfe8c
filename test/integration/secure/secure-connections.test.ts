import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logLevel } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePortFrom } from '../../../harness/ports.js';
import { uniqueName } from '../../../harness/stack.js';
import { checkElasticsearch, createElasticsearch } from '../../../src/clients/elasticsearch.js';
import { checkKafka, createKafka, type KafkaConnection } from '../../../src/clients/kafka.js';
import { createRedis, probeRedis } from '../../../src/clients/redis.js';
import { StartupCheckError } from '../../../src/clients/startup-check-error.js';
import { loadConfig } from '../../../src/config/config.js';
import type { KafkaSaslMechanism } from '../../../src/config/security.js';
import { otherCa, type SecureStack, secureStack } from '../../support/servers/secure-stack.js';

/**
 * Each way of connecting, against the real secured servers (scripts/stack.sh --secure):
 * every SASL mechanism and mutual TLS on Kafka, an API key and a user on Elasticsearch over
 * https, Redis with a password over TLS; and the start-up checks' exact line for each
 * misconfiguration.
 */
describe('secured connections', () => {
  let s: SecureStack;
  let foreignCa: string;

  beforeAll(async () => {
    s = await secureStack();
    foreignCa = (await otherCa()).pem;
  });

  /** The stack's settings without some variables. */
  const without = (env: Readonly<Record<string, string>>, ...drop: string[]) =>
    Object.fromEntries(Object.entries(env).filter(([k]) => !drop.includes(k)));
  /** A secret in a file of its own (mode 600, ending in a line break as secret files do). */
  const secretFile = (name: string, text: string) => {
    const file = join(mkdtempSync(join(tmpdir(), 'rxingest-secret-')), name);
    writeFileSync(file, `${text}\n`, { mode: 0o600 });
    return file;
  };

  const sasl = (mechanism: KafkaSaslMechanism, password = s.kafka.password): KafkaConnection => ({
    brokers: [s.kafka.saslSsl],
    ssl: { ca: s.certs.ca },
    sasl: { mechanism, username: s.kafka.user, password },
  });
  const mtls = (): KafkaConnection => ({
    brokers: [s.kafka.mtls],
    ssl: {
      ca: s.certs.ca,
      cert: readFileSync(s.certs.clientCertFile, 'utf8'),
      key: readFileSync(s.certs.clientKeyFile, 'utf8'),
    },
  });
  const checkOf = (conn: KafkaConnection, topics = [uniqueName('absent')]) =>
    checkKafka({ ...conn, clientId: 'rxingest-test', groupId: uniqueName('g'), topics });

  /** Creates a topic, sends one record and sees the end offset move: a real round trip. */
  async function roundTrip(conn: KafkaConnection) {
    const kafka = createKafka(conn, { clientId: 'rxingest-test', logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    const producer = kafka.producer();
    const topic = uniqueName('secure-conn');
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
      await producer.connect();
      await producer.send({ topic, messages: [{ key: 'k', value: 'v' }] });
      const [p] = await admin.fetchTopicOffsets(topic);
      return p!.high;
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  }

  describe('Kafka', () => {
    it.each(['plain', 'scram-sha-256', 'scram-sha-512'] as const)(
      'SASL_SSL with %s: connects, creates a topic, produces',
      async (mechanism) => {
        expect(await roundTrip(sasl(mechanism))).toBe('1');
        await expect(checkOf(sasl(mechanism))).resolves.toBeUndefined();
      },
    );

    it('mutual TLS with the client certificate: connects, creates a topic, produces', async () => {
      expect(await roundTrip(mtls())).toBe('1');
      await expect(checkOf(mtls())).resolves.toBeUndefined();
    });

    it('the settings from the stack env file (with *_FILE secrets) reach the broker', async () => {
      const config = loadConfig({ ...s.env, INGEST_TOPICS: 'x' });
      expect(config.kafka.sasl?.mechanism).toBe('scram-sha-512');
      expect(await roundTrip(config.kafka)).toBe('1');
    });

    it('the other *_FILE and PEM forms through loadConfig reach the broker: KAFKA_SASL_USERNAME_FILE; mutual TLS with KAFKA_SSL_KEY_FILE, and with the certificate and key as PEM text', async () => {
      const saslConfig = loadConfig({
        ...without(s.env, 'KAFKA_SASL_USERNAME'),
        KAFKA_SASL_USERNAME_FILE: secretFile('kafka-user', s.kafka.user),
        INGEST_TOPICS: 'x',
      });
      expect(saslConfig.kafka.sasl?.username).toBe(s.kafka.user);
      expect(await roundTrip(saslConfig.kafka)).toBe('1');

      // The stack's settings without SASL, on the listener that requires a client certificate.
      const mtlsBase = {
        ...without(s.env, 'KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD_FILE'),
        KAFKA_BROKERS: s.kafka.mtls,
        INGEST_TOPICS: 'x',
      };
      for (const tls of [
        { KAFKA_SSL_CERT: s.certs.clientCertFile, KAFKA_SSL_KEY_FILE: s.certs.clientKeyFile },
        {
          KAFKA_SSL_CERT: readFileSync(s.certs.clientCertFile, 'utf8'),
          KAFKA_SSL_KEY: readFileSync(s.certs.clientKeyFile, 'utf8'),
        },
      ]) {
        const config = loadConfig({ ...mtlsBase, ...tls });
        expect(config.kafka.sasl).toBeUndefined();
        expect(config.kafka.brokers).toEqual([s.kafka.mtls]);
        expect(await roundTrip(config.kafka), Object.keys(tls).join(', ')).toBe('1');
      }
    });

    it.each(['plain', 'scram-sha-256', 'scram-sha-512'] as const)(
      'a wrong password with %s stops the check with one line',
      async (mechanism) => {
        const err = await checkOf(sasl(mechanism, 'not-the-password')).catch((e) => e);
        expect(err).toBeInstanceOf(StartupCheckError);
        expect(err.message).toBe(
          `Kafka at ${s.kafka.saslSsl}: SASL authentication failed for user "rxingest" (${mechanism.toUpperCase()}): wrong user name or password`,
        );
      },
    );

    it('an unknown CA stops the check with one line', async () => {
      const err = await checkOf({ ...sasl('scram-sha-512'), ssl: { ca: foreignCa } }).catch((e) => e);
      expect(err).toBeInstanceOf(StartupCheckError);
      expect(err.message).toBe(
        `Kafka at ${s.kafka.saslSsl}: TLS: the server's certificate is not trusted (unable to verify the first certificate); set KAFKA_SSL_CA to the CA that signed the broker's certificate`,
      );
    });

    it('no client certificate on the mutual-TLS listener stops the check with one line', async () => {
      const err = await checkOf({ brokers: [s.kafka.mtls], ssl: { ca: s.certs.ca } }).catch((e) => e);
      expect(err).toBeInstanceOf(StartupCheckError);
      expect(err.message).toMatch(
        new RegExp(
          `^Kafka at ${s.kafka.mtls}: TLS: the server refused the TLS handshake \\([a-z0-9_]+\\); does the listener require a client certificate \\(KAFKA_SSL_CERT, KAFKA_SSL_KEY\\)\\?$`,
        ),
      );
    });

    it('a user without ACLs on the input topic stops the check with one line', async () => {
      const topic = uniqueName('acl');
      const admin = createKafka(sasl('scram-sha-512'), { clientId: 't', logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
      await admin.disconnect();
      const limited: KafkaConnection = {
        ...sasl('scram-sha-512'),
        sasl: {
          mechanism: 'scram-sha-512',
          username: s.kafka.limitedUser,
          password: s.kafka.limitedPassword,
        },
      };
      const err = await checkOf(limited, [topic]).catch((e) => e);
      expect(err).toBeInstanceOf(StartupCheckError);
      expect(err.message).toBe(
        `Kafka at ${s.kafka.saslSsl}: user "rxingest-limited" is not authorized for topic ${topic} (TOPIC_AUTHORIZATION_FAILED): grant it Describe and Read`,
      );
    });

    it('an unreachable broker is not a misconfiguration: the check returns', async () => {
      const port = await freePortFrom(19600);
      await expect(
        checkOf({ ...sasl('scram-sha-512'), brokers: [`127.0.0.1:${port}`] }),
      ).resolves.toBeUndefined();
    });
  });

  describe('Elasticsearch', () => {
    const indices = { profilesIndex: 'conn-profiles', eventsIndex: 'conn-events-{yyyy.MM.dd}' };
    const es = (conn: Parameters<typeof createElasticsearch>[0]) =>
      createElasticsearch(conn, { requestTimeout: 10_000, maxRetries: 0 });

    it('an API key over https with the CA: authenticates, and the check passes', async () => {
      const conn = {
        node: s.elasticsearch.node,
        auth: { apiKey: s.elasticsearch.apiKey },
        caCert: s.certs.ca,
      };
      const client = es(conn);
      try {
        const me = await client.security.authenticate();
        expect(me.authentication_type).toBe('api_key');
        expect(me.username).toBe('rxingest');
        await expect(checkElasticsearch(client, { ...conn, ...indices })).resolves.toBeUndefined();
      } finally {
        await client.close();
      }
    });

    it('a user and password: authenticates, and the check passes', async () => {
      const conn = {
        node: s.elasticsearch.node,
        auth: { username: s.elasticsearch.user, password: s.elasticsearch.password },
        caCert: s.certs.ca,
      };
      const client = es(conn);
      try {
        expect((await client.security.authenticate()).authentication_type).toBe('realm');
        await expect(checkElasticsearch(client, { ...conn, ...indices })).resolves.toBeUndefined();
      } finally {
        await client.close();
      }
    });

    it('ES_USERNAME_FILE and ES_PASSWORD_FILE through loadConfig: authenticates as that user, and the check passes', async () => {
      const config = loadConfig({
        ...without(s.env, 'ES_API_KEY_FILE'),
        ES_USERNAME_FILE: secretFile('es-user', s.elasticsearch.user),
        ES_PASSWORD_FILE: secretFile('es-password', s.elasticsearch.password),
        INGEST_TOPICS: 'x',
      });
      expect(config.elasticsearch.auth).toEqual({
        username: s.elasticsearch.user,
        password: s.elasticsearch.password,
      });
      const client = es(config.elasticsearch);
      try {
        const me = await client.security.authenticate();
        expect(me.authentication_type).toBe('realm');
        expect(me.username).toBe(s.elasticsearch.user);
        await expect(
          checkElasticsearch(client, { ...config.elasticsearch, ...indices }),
        ).resolves.toBeUndefined();
      } finally {
        await client.close();
      }
    });

    it('a wrong password stops the check with one line', async () => {
      const conn = {
        node: s.elasticsearch.node,
        auth: { username: s.elasticsearch.user, password: 'not-the-password' },
        caCert: s.certs.ca,
      };
      const client = es(conn);
      const err = await checkElasticsearch(client, { ...conn, ...indices }).catch((e) => e);
      await client.close();
      expect(err).toBeInstanceOf(StartupCheckError);
      expect(err.message).toBe(
        `Elasticsearch at ${s.elasticsearch.node}: authentication with user "rxingest" (ES_USERNAME/ES_PASSWORD) failed (401): wrong, expired or revoked credentials`,
      );
    });
  });

  describe('Redis', () => {
    const withPassword = (url: string, password = s.redis.password) => url.replace('//', `//:${password}@`);

    it('rediss:// with the password and the CA: SET and GET', async () => {
      const redis = createRedis(
        { url: withPassword(s.redis.tls), caCert: s.certs.ca },
        { lazyConnect: true },
      );
      try {
        await redis.connect();
        const key = uniqueName('secure-conn');
        await redis.set(key, 'v', 'PX', 60_000);
        expect(await redis.get(key)).toBe('v');
      } finally {
        redis.disconnect();
      }
    });

    it('the probe: up with the right settings', async () => {
      expect(await probeRedis({ url: withPassword(s.redis.tls), caCert: s.certs.ca })).toEqual({ up: true });
      expect(await probeRedis({ url: withPassword(s.redis.plain) })).toEqual({ up: true });
    });

    it('the probe: down (nothing listens) is "unavailable", not an error', async () => {
      const port = await freePortFrom(16500);
      const probe = await probeRedis({
        url: `rediss://:${s.redis.password}@127.0.0.1:${port}`,
        caCert: s.certs.ca,
      });
      expect(probe).toEqual({
        up: false,
        reason: `Redis at rediss://:***@127.0.0.1:${port} is unreachable: connect ECONNREFUSED 127.0.0.1:${port}`,
      });
    });

    it('the probe: a wrong password, no password and an unknown CA are misconfigurations', async () => {
      const tls = s.redis.tls;
      const wrong = await probeRedis({ url: withPassword(tls, 'not-it'), caCert: s.certs.ca }).catch(
        (e) => e,
      );
      expect(wrong).toBeInstanceOf(StartupCheckError);
      expect(wrong.message).toBe(
        `Redis at ${withPassword(tls, '***')}: wrong password or user name (WRONGPASS)`,
      );

      const none = await probeRedis({ url: tls, caCert: s.certs.ca }).catch((e) => e);
      expect(none.message).toBe(
        `Redis at ${tls}: the server requires a password (NOAUTH): put it in REDIS_URL (redis://:password@host:port)`,
      );

      const ca = await probeRedis({ url: withPassword(tls), caCert: foreignCa }).catch((e) => e);
      expect(ca).toBeInstanceOf(StartupCheckError);
      expect(ca.message).toMatch(
        new RegExp(
          `^Redis at rediss://:\\*\\*\\*@${tls.replace('rediss://', '')}: TLS: the server's certificate is not trusted \\([^)]+\\); set REDIS_CA_CERT to the CA that signed the server's certificate$`,
        ),
      );
    });
  });
});
