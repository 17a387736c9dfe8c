import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@elastic/elasticsearch';
import { type Admin, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedState } from '../../../harness/deployment/expected-state.js';
import { freePortFrom } from '../../../harness/ports.js';
import { readCommitted, uniqueName, waitFor } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { spawnWorker } from '../../../harness/worker/process.js';
import { parseProduceOptions } from '../../../src/cli/produce-command.js';
import { createElasticsearch } from '../../../src/clients/elasticsearch.js';
import { createKafka, type KafkaConnection } from '../../../src/clients/kafka.js';
import { createRedis } from '../../../src/clients/redis.js';
import { runProducer } from '../../../src/generator/produce.js';
import { planWorkload, workloadRecords } from '../../../src/generator/workload.js';
import {
  kcatSecureOptions,
  otherCa,
  type SecureStack,
  secureStack,
} from '../../support/servers/secure-stack.js';

const PARTITIONS = 4;
const RULES = [{ id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' }];

/**
 * The worker and `rxingest produce` against the real secured stack (scripts/stack.sh --secure):
 * Kafka over SASL_SSL with SCRAM-SHA-512, Elasticsearch with an API key over https with the
 * stack's CA, Redis with a password over TLS, every secret given through a *_FILE variable.
 * Each misconfiguration stops the start with one exact line; no secret ever shows in the
 * output, on a failing start or a succeeding one.
 */
describe('the worker against the secured stack', () => {
  let s: SecureStack;
  let kafka: KafkaConnection;
  let admin: Admin;
  let es: Client;
  let foreignCaFile: string;
  const input = uniqueName('secure-in');

  beforeAll(async () => {
    s = await secureStack();
    foreignCaFile = (await otherCa()).file;
    kafka = {
      brokers: [s.kafka.saslSsl],
      ssl: { ca: s.certs.ca },
      sasl: { mechanism: 'scram-sha-512', username: s.kafka.user, password: s.kafka.password },
    };
    admin = createKafka(kafka, { clientId: 'rxingest-test', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: input, numPartitions: 2 }], waitForLeaders: true });
    es = createElasticsearch(
      {
        node: s.elasticsearch.node,
        auth: { username: s.elasticsearch.adminUser, password: s.elasticsearch.adminPassword },
        caCert: s.certs.ca,
      },
      { requestTimeout: 30_000 },
    );
  });
  afterAll(async () => {
    await admin?.disconnect();
    await es?.close();
  });

  /** The stack's env file with some variables replaced or removed (undefined). */
  const envWith = (changes: Record<string, string | undefined> = {}): Record<string, string> => {
    const env: Record<string, string | undefined> = { ...s.env, ...changes };
    return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  };
  const noSecretIn = (text: string, extra: string[] = []) => {
    for (const secret of [...s.secrets, ...extra])
      expect(text.includes(secret), 'a secret in the output').toBe(false);
  };

  /** The end-to-end run's deployment, for the tools that run after it with the same environment. */
  let ingested:
    | {
        readonly names: Record<'topic' | 'dlq' | 'triggers' | 'group' | 'profiles' | 'events', string>;
        readonly env: Record<string, string>;
        readonly expected: ReturnType<typeof expectedState>;
      }
    | undefined;

  it('ingests 3,000 messages to exactly the contract state, with no secret in its output or metrics', async () => {
    const name = uniqueName('secure-e2e');
    const names = {
      topic: `${name}.in`,
      dlq: `${name}.dlq`,
      triggers: `${name}.triggers`,
      group: `${name}-group`,
      profiles: `${name}-profiles`,
      events: `${name}-events`,
    };
    await admin.createTopics({
      topics: [
        { topic: names.topic, numPartitions: PARTITIONS },
        {
          topic: names.dlq,
          numPartitions: 2,
          configEntries: [{ name: 'max.message.bytes', value: '4194304' }],
        },
        { topic: names.triggers, numPartitions: 2 },
      ],
      waitForLeaders: true,
    });
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: 2, name: names.topic, configEntries: [{ name: 'max.message.bytes', value: '4194304' }] },
      ],
    });
    const rulesFile = join(tmpdir(), `${name}-rules.json`);
    writeFileSync(rulesFile, JSON.stringify(RULES));
    const metricsPort = await freePortFrom(19700);
    const env = envWith({
      INGEST_TOPICS: names.topic,
      INGEST_GROUP: names.group,
      DLQ_TOPIC: names.dlq,
      TRIGGERS_TOPIC: names.triggers,
      PROFILES_INDEX: names.profiles,
      EVENTS_INDEX: names.events,
      TRIGGER_RULES: rulesFile,
      REDIS_KEY_PREFIX: `${name}:`,
      DEDUP_WINDOW_MS: '1000',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      COMMIT_INTERVAL_MS: '200',
      HTTP_PORT: String(metricsPort),
      LOG_LEVEL: 'debug',
    });
    const records = planWorkload({
      seed: 21,
      count: 3_000,
      ratePerSec: 3_000,
      clients: 100,
      duplicateShare: 0.02,
      duplicateDelayMs: { min: 10, max: 300 },
      lateDuplicateShare: 0.02,
      lateDuplicateDelayMs: { min: 1_500, max: 2_000 }, // outside the 1 s window: Redis must catch these
      poisonShare: 0.01,
      shuffleVersions: 0.1,
    });

    const worker = spawnWorker(env, `${names.group}-worker`);
    let metricsText = '';
    try {
      const producer = createKafka(kafka, { clientId: 'rxingest-test', logLevel: logLevel.NOTHING }).producer(
        {
          idempotent: true,
          maxInFlightRequests: 1,
        },
      );
      await producer.connect();
      const sent: typeof records = [];
      await runProducer({ topic: names.topic, records }, { producer, onSent: (rs) => sent.push(...rs) });
      await producer.disconnect();
      const expected = expectedState(
        sent.map((r) => r.value),
        { rules: RULES },
      );
      expect(expected.poison.length).toBeGreaterThan(10);
      expect(expected.triggers.size).toBeGreaterThan(10);
      ingested = { names, env, expected };

      await waitFor(
        'committed offsets at the end of every partition',
        async () => {
          const [ends, committed] = await Promise.all([
            admin.fetchTopicOffsets(names.topic),
            admin.fetchOffsets({ groupId: names.group, topics: [names.topic] }),
          ]);
          const c = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
          return ends.every((e) => c.get(e.partition) === e.high);
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );

      await es.indices.refresh({ index: [names.profiles, names.events] });
      const events = await searchAll(es, names.events);
      expect(events.size).toBe(expected.events.size);
      for (const [id, doc] of expected.events) {
        const { origin, ...body } = events.get(id) as { origin?: { topic: string } };
        expect(body, `event ${id}`).toEqual(JSON.parse(JSON.stringify(doc)));
        expect(origin?.topic, `origin of ${id}`).toBe(names.topic);
      }
      const profiles = await searchAll(es, names.profiles);
      expect(profiles.size).toBe(expected.profiles.size);
      for (const [clientId, doc] of expected.profiles) {
        const got = profiles.get(clientId) as { version: number; data: unknown } | undefined;
        expect({ version: got?.version, data: got?.data }, `profile ${clientId}`).toEqual(
          JSON.parse(JSON.stringify(doc)),
        );
      }
      const kcat = { brokers: s.kafka.saslSsl, kcatOptions: kcatSecureOptions(s) };
      const triggers = await readCommitted(names.triggers, kcat);
      const ids = triggers.map((t) => JSON.parse(String(t.value)).id as string);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(ids)).toEqual(new Set(expected.triggers.keys()));
      const dlq = await readCommitted(names.dlq, kcat);
      expect(dlq.length).toBe(expected.poison.length);

      // The processed-id marks went to the secured Redis (over TLS, with the password).
      const redis = createRedis(
        { url: s.redis.tls.replace('//', `//:${s.redis.password}@`), caCert: s.certs.ca },
        { lazyConnect: true },
      );
      await redis.connect();
      const [, keys] = await redis.scan('0', 'MATCH', `${name}:*`, 'COUNT', 10_000);
      redis.disconnect();
      expect(keys.length).toBeGreaterThan(0);

      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      metricsText = await res.text();
      expect(metricsText).toMatch(/rxingest_/);
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    }
    const output = readFileSync(worker.logFile, 'utf8');
    expect(output).toContain('worker started');
    expect(output).toContain('"msg":"stopped"');
    noSecretIn(output);
    noSecretIn(metricsText);
  });

  it('rxingest reconcile and dlq with the worker environment after its run: the contract state, no secret in their output', async () => {
    const { names, env, expected } = ingested!;
    const classes = new Map<string, number>();
    for (const p of expected.poison) classes.set(p.errorClass, (classes.get(p.errorClass) ?? 0) + 1);
    const [reconcile, list, replay] = await Promise.all([
      runCli(['reconcile', '--json'], env),
      runCli(['dlq', 'list', '--json'], env),
      runCli(['dlq', 'replay', '--dry-run'], env),
    ]);
    for (const r of [reconcile, list, replay]) noSecretIn(r.stdout + r.stderr);

    const report = JSON.parse(reconcile.stdout);
    expect(report.examples, reconcile.stdout.slice(0, 2000)).toEqual({});
    expect(reconcile.code, reconcile.stderr).toBe(0);
    expect(report.messages).toBe(3_000);
    expect(report.duplicates).toBe(expected.duplicates);
    expect(report.events).toMatchObject({ expected: expected.events.size, found: expected.events.size });
    expect(report.profiles).toMatchObject({
      expected: expected.profiles.size,
      found: expected.profiles.size,
    });
    expect(report.triggers).toMatchObject({
      expected: expected.triggers.size,
      found: expected.triggers.size,
    });
    expect(report.dlq).toMatchObject({ expected: expected.poison.length, found: expected.poison.length });
    expect(Object.entries(report.deadLetters).sort()).toEqual([...classes].sort());

    expect(list.code, list.stderr).toBe(0);
    const dead = JSON.parse(list.stdout);
    expect(dead.topic).toBe(names.dlq);
    expect(dead.total).toBe(expected.poison.length);
    expect(Object.entries(dead.byClass).sort()).toEqual([...classes].sort());

    // Every dead letter is still poison with the worker's settings: nothing would be put back.
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout.split('\n')[0]).toBe(`would replay 0 dead letters from ${names.dlq}`);
    expect(replay.stdout).toContain(
      `still poison with the current settings (skipped): ${expected.poison.length} (`,
    );
  });

  it('the tools with the other credentials, each from a *_FILE: mutual TLS to Kafka, an Elasticsearch user, a SASL user name', async () => {
    const { names, env, expected } = ingested!;
    const dir = mkdtempSync(join(tmpdir(), 'rxingest-secrets-'));
    const secretFile = (name: string, text: string) => {
      const file = join(dir, name);
      writeFileSync(file, `${text}\n`, { mode: 0o600 });
      return file;
    };
    // Kafka over the mutual-TLS listener (no SASL), the key given by KAFKA_SSL_KEY_FILE;
    // Elasticsearch with a user and password, both from files, instead of the API key.
    const without = (e: Record<string, string>, ...drop: string[]) =>
      Object.fromEntries(Object.entries(e).filter(([k]) => !drop.includes(k)));
    const mtlsEnv = {
      ...without(
        env,
        'KAFKA_SASL_MECHANISM',
        'KAFKA_SASL_USERNAME',
        'KAFKA_SASL_PASSWORD_FILE',
        'ES_API_KEY_FILE',
      ),
      KAFKA_BROKERS: s.kafka.mtls,
      KAFKA_SSL_CERT: s.certs.clientCertFile,
      KAFKA_SSL_KEY_FILE: s.certs.clientKeyFile,
      ES_USERNAME_FILE: secretFile('es-user', s.elasticsearch.user),
      ES_PASSWORD_FILE: secretFile('es-password', s.elasticsearch.password),
    };
    // SASL as before, the user name from KAFKA_SASL_USERNAME_FILE.
    const userFileEnv = {
      ...without(env, 'KAFKA_SASL_USERNAME'),
      KAFKA_SASL_USERNAME_FILE: secretFile('kafka-user', s.kafka.user),
    };
    const [reconcile, list] = await Promise.all([
      runCli(['reconcile', '--json'], mtlsEnv),
      runCli(['dlq', 'list', '--json'], userFileEnv),
    ]);
    for (const r of [reconcile, list]) noSecretIn(r.stdout + r.stderr);
    expect(reconcile.code, reconcile.stderr).toBe(0);
    const report = JSON.parse(reconcile.stdout);
    expect(report.ok).toBe(true);
    expect(report.events.found).toBe(expected.events.size);
    expect(report.dlq.found).toBe(expected.poison.length);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject({ topic: names.dlq, total: expected.poison.length });

    // The same files with a wrong password: the tool stops at Elasticsearch, as it would with it in ES_PASSWORD.
    const wrong = await runCli(['reconcile'], {
      ...mtlsEnv,
      ES_PASSWORD_FILE: secretFile('es-wrong', 'wrong-es-password-2'),
    });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr.trim()).toBe(
      `rxingest reconcile: cannot run: Elasticsearch at ${s.elasticsearch.node} refused the tool (HTTP 401): check ES_API_KEY / ES_USERNAME`,
    );
    noSecretIn(wrong.stdout + wrong.stderr, ['wrong-es-password-2']);
  });

  it('reconcile and dlq with a wrong password stop with exit 2 and one line naming the server, no secret', async () => {
    const kafkaLine = (tool: string) =>
      `rxingest ${tool}: cannot run: Kafka at ${s.kafka.saslSsl}: SASL authentication failed for user "rxingest" (SCRAM-SHA-512): wrong user name or password`;
    const wrongKafka = envWith({
      INGEST_TOPICS: input,
      KAFKA_SASL_PASSWORD_FILE: undefined,
      KAFKA_SASL_PASSWORD: 'wrong-kafka-password-2',
    });
    const cases: [string[], Record<string, string>, string][] = [
      [['reconcile', '--json'], wrongKafka, kafkaLine('reconcile')],
      [['dlq', 'list', '--json'], wrongKafka, kafkaLine('dlq list')],
      [['dlq', 'show', '0:0'], wrongKafka, kafkaLine('dlq show')],
      [['dlq', 'replay', '--dry-run'], wrongKafka, kafkaLine('dlq replay')],
      [
        ['reconcile'],
        envWith({
          INGEST_TOPICS: input,
          ES_API_KEY_FILE: undefined,
          ES_USERNAME: s.elasticsearch.user,
          ES_PASSWORD: 'wrong-es-password-1',
        }),
        `rxingest reconcile: cannot run: Elasticsearch at ${s.elasticsearch.node} refused the tool (HTTP 401): check ES_API_KEY / ES_USERNAME`,
      ],
    ];
    const results = await Promise.all(cases.map(([args, env]) => runCli(args, env)));
    results.forEach((r, i) => {
      const [args, , line] = cases[i]!;
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr.trim(), args.join(' ')).toBe(line);
      noSecretIn(r.stdout + r.stderr, ['wrong-kafka-password-2', 'wrong-es-password-1']);
    });
  });

  it('--help of every command shows no secret, with every secret set in the environment', async () => {
    const env = envWith({
      KAFKA_SASL_PASSWORD_FILE: undefined,
      KAFKA_SASL_PASSWORD: s.kafka.password,
      ES_API_KEY_FILE: undefined,
      ES_API_KEY: s.elasticsearch.apiKey,
      ES_USERNAME: s.elasticsearch.user,
      ES_PASSWORD: s.elasticsearch.password,
      REDIS_URL_FILE: undefined,
      REDIS_URL: s.redis.tls.replace('//', `//:${s.redis.password}@`),
    });
    const commands = [
      [],
      ['worker'],
      ['reconcile'],
      ['dlq'],
      ['dlq', 'list'],
      ['dlq', 'show'],
      ['dlq', 'replay'],
      ['produce'],
      ['shed'],
      ['unshed'],
      ['demo'],
    ];
    const results = await Promise.all(commands.map((c) => runCli([...c, '--help'], env)));
    results.forEach((r, i) => {
      const what = `rxingest ${commands[i]!.join(' ')} --help`;
      expect(r.code, what).toBe(0);
      expect(r.stdout, what).toMatch(/^Usage: /);
      noSecretIn(r.stdout + r.stderr);
    });
  });

  it('rxingest produce sends its workload over SASL_SSL (an independent reader sees every record)', async () => {
    const topic = uniqueName('secure-produce');
    const raw = { topic, createTopic: '2', count: '500', rate: '5000', seed: '9' };
    const r = await runCli(
      [
        'produce',
        '--topic',
        topic,
        '--create-topic',
        '2',
        '--count',
        '500',
        '--rate',
        '5000',
        '--seed',
        '9',
        '--json',
        '--quiet',
      ],
      envWith(),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).total).toBe(500);
    const planned = [...workloadRecords(parseProduceOptions(raw, {}).workload)];
    const got = await readCommitted(topic, { brokers: s.kafka.saslSsl, kcatOptions: kcatSecureOptions(s) });
    const b64 = (v: Buffer | null) => (v === null ? 'null' : v.toString('base64'));
    expect(got.map((g) => b64(g.value)).sort()).toEqual(planned.map((p) => b64(p.value)).sort());
    noSecretIn(r.stdout + r.stderr);
  });

  it('rxingest produce with a wrong password stops with one line', async () => {
    const r = await runCli(
      ['produce', '--topic', input, '--count', '10', '--quiet'],
      envWith({ KAFKA_SASL_PASSWORD_FILE: undefined, KAFKA_SASL_PASSWORD: 'wrong-password-123' }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `error: Kafka at ${s.kafka.saslSsl}: SASL authentication failed for user "rxingest" (SCRAM-SHA-512): wrong user name or password`,
    );
    noSecretIn(r.stdout + r.stderr, ['wrong-password-123']);
  });

  /** Each case: what is changed, the line the start must stop with, and the secrets it adds. */
  type Indices = { profiles: string; events: string };
  const misconfigured: [
    string,
    () => Record<string, string | undefined>,
    (i: Indices) => string,
    string[],
  ][] = [
    [
      'a wrong Kafka password',
      () => ({ KAFKA_SASL_PASSWORD_FILE: undefined, KAFKA_SASL_PASSWORD: 'wrong-kafka-password-1' }),
      () =>
        `Kafka at ${s.kafka.saslSsl}: SASL authentication failed for user "rxingest" (SCRAM-SHA-512): wrong user name or password`,
      ['wrong-kafka-password-1'],
    ],
    [
      'an unknown CA for Kafka',
      () => ({ KAFKA_SSL_CA: foreignCaFile }),
      () =>
        `Kafka at ${s.kafka.saslSsl}: TLS: the server's certificate is not trusted (unable to verify the first certificate); set KAFKA_SSL_CA to the CA that signed the broker's certificate`,
      [],
    ],
    [
      'a Kafka user without ACLs on the input topic',
      () => ({
        KAFKA_SASL_USERNAME: s.kafka.limitedUser,
        KAFKA_SASL_PASSWORD_FILE: undefined,
        KAFKA_SASL_PASSWORD: s.kafka.limitedPassword,
      }),
      () =>
        `Kafka at ${s.kafka.saslSsl}: user "rxingest-limited" is not authorized for topic ${input} (TOPIC_AUTHORIZATION_FAILED): grant it Describe and Read`,
      [],
    ],
    [
      'a wrong Elasticsearch API key',
      () => ({
        ES_API_KEY_FILE: undefined,
        ES_API_KEY: Buffer.from('nope-id:wrong-api-key-1').toString('base64'),
      }),
      () =>
        `Elasticsearch at ${s.elasticsearch.node}: authentication with ES_API_KEY failed (401): wrong, expired or revoked credentials`,
      [Buffer.from('nope-id:wrong-api-key-1').toString('base64'), 'wrong-api-key-1'],
    ],
    [
      'an unknown CA for Elasticsearch',
      () => ({ ES_CA_CERT: foreignCaFile }),
      () =>
        `Elasticsearch at ${s.elasticsearch.node}: TLS: the server's certificate is not trusted (unable to verify the first certificate); set ES_CA_CERT to the CA that signed the server's certificate`,
      [],
    ],
    [
      'an Elasticsearch user without write privilege',
      () => ({
        ES_API_KEY_FILE: undefined,
        ES_USERNAME: s.elasticsearch.readerUser,
        ES_PASSWORD: s.elasticsearch.readerPassword,
      }),
      (i) =>
        `Elasticsearch at ${s.elasticsearch.node}: user "rxingest-reader" lacks privileges: index "${i.profiles}" (index, create_index); index "${i.events}" (index, create_index); the worker needs read, index, create_index, view_index_metadata`,
      [],
    ],
    [
      'a wrong Redis password',
      () => ({
        REDIS_URL_FILE: undefined,
        REDIS_URL: s.redis.tls.replace('//', '//:wrong-redis-password-1@'),
      }),
      () => `Redis at ${s.redis.tls.replace('//', '//:***@')}: wrong password or user name (WRONGPASS)`,
      ['wrong-redis-password-1'],
    ],
  ];

  it.each(misconfigured)('%s stops the start with one line and no secret', async (_, change, line, extra) => {
    // Indices of its own: whether create_index is needed depends on whether they exist.
    const indices = { profiles: uniqueName('p'), events: uniqueName('e') };
    const r = await runCli(
      ['worker'],
      envWith({
        INGEST_TOPICS: input,
        INGEST_GROUP: uniqueName('g'),
        PROFILES_INDEX: indices.profiles,
        EVENTS_INDEX: indices.events,
        KAFKA_TOPIC_WAIT_MS: '0',
        ...change(),
      }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`rxingest: could not start: ${line(indices)}`);
    noSecretIn(r.stdout + r.stderr, extra);
  });

  it('an unknown CA for Redis stops the start with one line', async () => {
    const r = await runCli(['worker'], envWith({ INGEST_TOPICS: input, REDIS_CA_CERT: foreignCaFile }));
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(
      new RegExp(
        `^rxingest: could not start: Redis at rediss://:\\*\\*\\*@${s.redis.tls.replace('rediss://', '')}: TLS: the server's certificate is not trusted \\([^)]+\\); set REDIS_CA_CERT to the CA that signed the server's certificate$`,
      ),
    );
    noSecretIn(r.stdout + r.stderr);
  });

  it('an unreachable Redis named with a password in REDIS_URL does not print the password', async () => {
    // Redis only saves work: the worker starts without it, saying so, and never shows the password.
    const port = await freePortFrom(16600);
    const r = await runCli(
      ['worker'],
      envWith({
        INGEST_TOPICS: input,
        REDIS_URL_FILE: undefined,
        REDIS_URL: `rediss://:${s.redis.password}@127.0.0.1:${port}`,
      }),
      { until: /worker started/ },
    );
    expect(r.code).toBe(0);
    const warning = (r.stdout + r.stderr).split('\n').find((l) => l.includes('Redis unavailable at start'));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning!).reason).toMatch(
      new RegExp(`^Redis at rediss://:\\*\\*\\*@127\\.0\\.0\\.1:${port} is unreachable: `),
    );
    noSecretIn(r.stdout + r.stderr);
  });

  it('a bad secret value is named, never echoed; --help shows no configured value', async () => {
    const bad = await runCli(
      ['worker'],
      envWith({ ES_API_KEY_FILE: undefined, ES_API_KEY: 'two words-secret-1' }),
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe(
      'rxingest: invalid configuration: ES_API_KEY (value hidden) is invalid: expected the encoded API key (one word, as the create API key answer gives it in "encoded")',
    );
    noSecretIn(bad.stdout + bad.stderr, ['words-secret-1']);

    const help = await runCli(
      ['worker', '--help'],
      envWith({ KAFKA_SASL_PASSWORD_FILE: undefined, KAFKA_SASL_PASSWORD: s.kafka.password }),
    );
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('KAFKA_SASL_PASSWORD');
    noSecretIn(help.stdout + help.stderr);
  });
});

async function searchAll(es: Client, index: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  let res = await es.search({ index, size: 5000, scroll: '1m', query: { match_all: {} } });
  while (res.hits.hits.length > 0) {
    for (const h of res.hits.hits) out.set(h._id!, h._source);
    res = await es.scroll({ scroll_id: res._scroll_id!, scroll: '1m' });
  }
  if (res._scroll_id) await es.clearScroll({ scroll_id: res._scroll_id });
  return out;
}
