import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log/logger.js';
import { secretScrubber, secretValues } from '../../../src/log/secrets.js';

const noFile = (p: string): string => {
  throw new Error(`unexpected read of ${p}`);
};

/** A logger writing into a string. */
function capture(secrets: readonly string[]) {
  let out = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      out += chunk;
      done();
    },
  });
  const log = createLogger({ level: 'debug', secrets }, sink);
  return { log, text: () => out };
}

const API_KEY = Buffer.from('keyid-1:the-api-key-value').toString('base64');
const config = loadConfig(
  {
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: 'svc',
    KAFKA_SASL_PASSWORD: 'kafka-pass-Value',
    ES_API_KEY: API_KEY,
    REDIS_URL: 'rediss://:redis%2Fpass-Value@r:6380',
  },
  noFile,
);

describe('secretValues', () => {
  it('holds each secret in the forms it may take: as given, decoded, URL-encoded', () => {
    const values = secretValues(config);
    for (const v of [
      'kafka-pass-Value',
      API_KEY,
      'keyid-1:the-api-key-value',
      'the-api-key-value',
      'redis/pass-Value',
      'redis%2Fpass-Value',
    ])
      expect(values).toContain(v);
  });

  it('for a user and password, also the Basic header they make', () => {
    const c = loadConfig({ ES_USERNAME: 'u', ES_PASSWORD: 'es-pass-Value' }, noFile);
    expect(secretValues(c)).toContain(Buffer.from('u:es-pass-Value').toString('base64'));
  });
});

describe('createLogger', () => {
  it('redacts credentials by path (settings objects, client options)', () => {
    const { log, text } = capture([]);
    log.info({ config: { kafka: config.kafka, elasticsearch: config.elasticsearch } }, 'settings');
    log.info({ options: { sasl: { password: 'x1-not-listed' }, auth: { apiKey: 'x2-not-listed' } } }, 'opts');
    log.warn({ err: { meta: { headers: { authorization: 'Basic x3-not-listed' } } } }, 'err');
    expect(text()).not.toContain('kafka-pass-Value');
    expect(text()).not.toContain(API_KEY);
    expect(text()).not.toContain('x1-not-listed');
    expect(text()).not.toContain('x2-not-listed');
    expect(text()).not.toContain('x3-not-listed');
    expect(text()).toContain('[redacted]');
  });

  it('never writes into the logged objects (the live config keeps its credentials)', () => {
    const { log } = capture([]);
    log.info({ config: { kafka: config.kafka, elasticsearch: config.elasticsearch } }, 'settings');
    log.info({ kafka: config.kafka }, 'again');
    expect(config.kafka.sasl?.password).toBe('kafka-pass-Value');
    expect(config.elasticsearch.auth).toEqual({ apiKey: API_KEY });
  });

  it('scrubs known secret values from messages and errors, wherever they sit', () => {
    const { log, text } = capture(secretValues(config));
    log.error({ err: new Error('connect to rediss://:redis%2Fpass-Value@r failed') }, 'redis failed');
    log.warn(`header was ApiKey ${API_KEY}`);
    log.info({ nested: { deep: { deeper: { value: 'kafka-pass-Value' } } } }, 'deep');
    const out = text();
    expect(out).not.toContain('redis%2Fpass-Value');
    expect(out).not.toContain(API_KEY);
    expect(out).not.toContain('kafka-pass-Value');
    expect(out.split('\n').filter(Boolean)).toHaveLength(3);
    for (const line of out.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('scrubs PEM private keys, also inside JSON strings', () => {
    const key = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----';
    const { log, text } = capture([]);
    log.info({ tls: { pem: key } }, 'with a key');
    expect(text()).not.toContain('MIIEvQIBADANBgkqhkiG9w0BAQEFAASC');
    expect(secretScrubber([])(`x ${key} y`)).toBe('x [redacted private key] y');
  });
});
