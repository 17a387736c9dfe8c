import { errors } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import {
  elasticsearchClientOptions,
  elasticsearchMisconfiguration,
} from '../../../src/clients/elasticsearch.js';
import { kafkaClientConfig, kafkaMisconfiguration } from '../../../src/clients/kafka.js';
import {
  describeRedisFailure,
  redisClientOptions,
  redisMisconfiguration,
} from '../../../src/clients/redis.js';
import { tlsProblem } from '../../../src/clients/tls-problem.js';

// What the factories hand to each library; what the servers make of it is tested against the
// real secured stack (test/integration/secure/secure-connections.test.ts).

describe('kafkaClientConfig', () => {
  it('plaintext: only the caller options and the brokers', () => {
    expect(kafkaClientConfig({ brokers: ['a:1'] }, { clientId: 'x' })).toEqual({
      clientId: 'x',
      brokers: ['a:1'],
    });
  });

  it('TLS without a CA uses the system CAs; with a CA and a client pair, all three', () => {
    expect(kafkaClientConfig({ brokers: ['a:1'], ssl: {} }, {}).ssl).toBe(true);
    expect(kafkaClientConfig({ brokers: ['a:1'], ssl: { ca: 'CA', cert: 'C', key: 'K' } }, {}).ssl).toEqual({
      rejectUnauthorized: true,
      ca: ['CA'],
      cert: 'C',
      key: 'K',
    });
  });

  it('SASL: mechanism, user name and password', () => {
    const sasl = { mechanism: 'scram-sha-256', username: 'u', password: 'p' } as const;
    expect(kafkaClientConfig({ brokers: ['a:1'], sasl }, {}).sasl).toEqual(sasl);
  });
});

describe('elasticsearchClientOptions', () => {
  it('API key or user, the CA, and redaction of credentials from error metadata', () => {
    const o = elasticsearchClientOptions(
      { node: 'https://e:9200', auth: { apiKey: 'k' }, caCert: 'CA' },
      { maxRetries: 0 },
    );
    expect(o).toEqual({
      node: 'https://e:9200',
      auth: { apiKey: 'k' },
      tls: { ca: 'CA' },
      maxRetries: 0,
      redaction: { type: 'remove' },
    });
    expect(elasticsearchClientOptions({ node: 'http://e:9200' })).toEqual({
      node: 'http://e:9200',
      redaction: { type: 'remove' },
    });
  });
});

describe('redisClientOptions', () => {
  it('TLS for rediss:// (with the CA when given), none for redis://', () => {
    expect(redisClientOptions({ url: 'redis://h:1' }, { lazyConnect: true })).toEqual({ lazyConnect: true });
    expect(redisClientOptions({ url: 'rediss://h:1' })).toEqual({ tls: {} });
    expect(redisClientOptions({ url: 'REDISS://h:1', caCert: 'CA' })).toEqual({ tls: { ca: 'CA' } });
  });
});

describe('telling misconfiguration from unavailability', () => {
  const tlsError = (code: string, message: string) => Object.assign(new Error(message), { code });

  it('TLS problems by Node code, also when wrapped (cause, originalError)', () => {
    expect(
      tlsProblem(tlsError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'))?.kind,
    ).toBe('untrusted');
    const wrapped = Object.assign(new Error('retries exceeded'), {
      originalError: tlsError(
        'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        'Connection error: unable to verify the first certificate',
      ),
    });
    expect(tlsProblem(wrapped)).toEqual({
      kind: 'untrusted',
      text: "the server's certificate is not trusted (unable to verify the first certificate)",
    });
    expect(tlsProblem(tlsError('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'alert'))?.kind).toBe('refused');
    expect(tlsProblem(tlsError('ERR_SSL_WRONG_VERSION_NUMBER', 'wrong version number'))?.kind).toBe(
      'not-tls',
    );
    expect(tlsProblem(tlsError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'))).toBeUndefined();
  });

  it('Kafka: SASL failures and TLS are misconfigurations, a refused connection is not', () => {
    const conn = { brokers: ['k:9094'], sasl: { mechanism: 'plain' as const, username: 'u', password: 'p' } };
    const sasl = Object.assign(new Error('SASL PLAIN authentication failed'), {
      name: 'KafkaJSSASLAuthenticationError',
    });
    expect(kafkaMisconfiguration(conn, sasl)).toBe(
      'Kafka at k:9094: SASL authentication failed for user "u" (PLAIN): wrong user name or password',
    );
    const unsupported = Object.assign(new Error('SASL PLAIN mechanism is not supported by the server'), {
      name: 'KafkaJSSASLAuthenticationError',
    });
    expect(kafkaMisconfiguration(conn, unsupported)).toBe(
      'Kafka at k:9094: the broker does not offer SASL mechanism PLAIN (KAFKA_SASL_MECHANISM)',
    );
    expect(
      kafkaMisconfiguration(conn, tlsError('ECONNREFUSED', 'Connection error: connect ECONNREFUSED')),
    ).toBeUndefined();
  });

  it('Elasticsearch: 401 is a misconfiguration; a 503 or a refused connection is not', () => {
    const response = (statusCode: number) =>
      new errors.ResponseError({ statusCode, body: {}, headers: {}, warnings: null, meta: {} as never });
    expect(elasticsearchMisconfiguration({ node: 'https://u:p@e:9200' }, response(401))).toBe(
      'Elasticsearch at https://***:***@e:9200: the server requires authentication (401): set ES_API_KEY or ES_USERNAME/ES_PASSWORD',
    );
    expect(elasticsearchMisconfiguration({ node: 'https://e:9200' }, response(503))).toBeUndefined();
    expect(
      elasticsearchMisconfiguration(
        { node: 'https://e:9200' },
        new errors.ConnectionError('connect ECONNREFUSED'),
      ),
    ).toBeUndefined();
  });

  it('Redis: WRONGPASS, NOAUTH, TLS are misconfigurations; a refused connection is unreachable (no password shown)', () => {
    const conn = { url: 'rediss://:hunter22@r:6380' };
    expect(redisMisconfiguration(conn, new Error('WRONGPASS invalid username-password pair'))).toBe(
      'Redis at rediss://:***@r:6380: wrong password or user name (WRONGPASS)',
    );
    expect(redisMisconfiguration(conn, new Error('NOAUTH Authentication required.'))).toMatch(/NOAUTH/);
    expect(redisMisconfiguration(conn, tlsError('CERT_HAS_EXPIRED', 'certificate has expired'))).toMatch(
      /^Redis at rediss:\/\/:\*\*\*@r:6380: TLS: the server's certificate is not trusted/,
    );
    const refused = tlsError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:6380');
    expect(redisMisconfiguration(conn, refused)).toBeUndefined();
    expect(describeRedisFailure(conn, refused)).toBe(
      'Redis at rediss://:***@r:6380 is unreachable: connect ECONNREFUSED 10.0.0.1:6380',
    );
  });
});
