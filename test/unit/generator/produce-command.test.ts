import { CommanderError } from 'commander';
import type { Kafka, KafkaConfig, ProducerRecord } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OptionError, parseProduceOptions, produceCommand } from '../../../src/cli/produce-command.js';

describe('parseProduceOptions', () => {
  it('has the documented defaults', () => {
    const s = parseProduceOptions({}, {});
    expect(s.brokers).toEqual(['localhost:9092']);
    expect(s.topic).toBe('ingest.events');
    expect(s.createTopic).toBeUndefined();
    expect(s.workload).toEqual({
      seed: 1,
      ratePerSec: 1000,
      durationMs: 10_000,
      clients: 100,
      profileShare: 0.3,
      duplicateShare: 0.02,
      poisonShare: 0.01,
      hostileKeyShare: 0.01,
      maxMessageBytes: 1024 * 1024,
      shuffleVersions: false,
    });
    expect(s.json).toBe(false);
  });

  it('takes brokers, topic and size from the environment', () => {
    const s = parseProduceOptions(
      {},
      { KAFKA_BROKERS: 'k1:9092, k2:9093', INGEST_TOPICS: ' a.b , c', MAX_MESSAGE_BYTES: '2048' },
    );
    expect(s.brokers).toEqual(['k1:9092', 'k2:9093']);
    expect(s.topic).toBe('a.b');
    expect(s.workload.maxMessageBytes).toBe(2048);
  });

  it('reads every option', () => {
    const s = parseProduceOptions(
      {
        brokers: 'h:1',
        topic: 't',
        rate: '250.5',
        count: '1234',
        clients: '7',
        profileShare: '0.5',
        duplicateShare: '0.1',
        poisonShare: '0.2',
        hostileKeyShare: '0.3',
        hotClients: '2',
        hotShare: '0.9',
        seed: '42',
        createTopic: '6',
        maxMessageBytes: '4096',
        shuffleVersions: true,
        eventNames: 'a, b',
        json: true,
        quiet: true,
      },
      {},
    );
    expect(s).toEqual({
      brokers: ['h:1'],
      topic: 't',
      createTopic: 6,
      json: true,
      quiet: true,
      workload: {
        seed: 42,
        ratePerSec: 250.5,
        count: 1234,
        clients: 7,
        profileShare: 0.5,
        duplicateShare: 0.1,
        poisonShare: 0.2,
        hostileKeyShare: 0.3,
        skew: { hotClients: 2, hotShare: 0.9 },
        maxMessageBytes: 4096,
        shuffleVersions: 0.5,
        eventNames: ['a', 'b'],
      },
    });
    expect(parseProduceOptions({ hotShare: '0.7' }, {}).workload.skew).toEqual({
      hotClients: 3,
      hotShare: 0.7,
    });
    expect(parseProduceOptions({ shuffleVersions: '0.2' }, {}).workload.shuffleVersions).toBe(0.2);
  });

  const bad: [Record<string, string>, RegExp][] = [
    [{ rate: '0' }, /^--rate "0" is invalid: expected a number greater than 0/],
    [{ rate: '1e9' }, /^--rate "1e9" is invalid/],
    [{ rate: 'fast' }, /^--rate "fast" is invalid/],
    [{ duration: '-1' }, /^--duration "-1" is invalid: expected a number of seconds/],
    [{ count: '2.5' }, /^--count "2.5" is invalid: expected a whole number from 1/],
    [{ count: '10', duration: '5' }, /^--duration and --count cannot be used together/],
    [{ clients: '0' }, /^--clients "0" is invalid: expected a whole number from 1 to 1000000$/],
    [{ profileShare: '1.1' }, /^--profile-share "1.1" is invalid: expected a share from 0 to 1/],
    [{ duplicateShare: 'x' }, /^--duplicate-share "x" is invalid/],
    [{ poisonShare: '-0.1' }, /^--poison-share "-0.1" is invalid/],
    [{ hostileKeyShare: '1.5' }, /^--hostile-key-share "1.5" is invalid: expected a share from 0 to 1/],
    [
      { duplicateShare: '0.5', poisonShare: '0.5' },
      /^--duplicate-share 0.5 and --poison-share 0.5 are invalid together/,
    ],
    [
      { hotClients: '100' },
      /^--hot-clients "100" is invalid: expected a whole number from 1 to 99 \(fewer than --clients 100\)$/,
    ],
    [{ hotShare: '0' }, /^--hot-share "0" is invalid: expected a share greater than 0/],
    [{ seed: '-3' }, /^--seed "-3" is invalid: expected a whole number from 0 to 4294967295$/],
    [
      { createTopic: '0' },
      /^--create-topic "0" is invalid: expected a whole number from 1 to 10000 \(partitions\)$/,
    ],
    [{ maxMessageBytes: '100' }, /^--max-message-bytes "100" is invalid: expected a whole number from 1024/],
    [{ shuffleVersions: '2' }, /^--shuffle-versions "2" is invalid/],
    [{ eventNames: ' , ' }, /^--event-names " , " is invalid: expected comma-separated event names/],
    [{ topic: 'a b' }, /^--topic "a b" is invalid: expected a Kafka topic name/],
    [{ brokers: 'nohost' }, /^--brokers "nohost" is invalid: expected host:port/],
  ];
  it.each(bad)(
    'rejects %o with one line naming the option, the value and what is expected',
    (raw, message) => {
      let err: unknown;
      try {
        parseProduceOptions(raw, {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OptionError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain('\n');
    },
  );

  it('names the variable when a bad value comes from the environment', () => {
    expect(() => parseProduceOptions({}, { KAFKA_BROKERS: '' })).toThrow(
      '--brokers "" (from KAFKA_BROKERS) is invalid: expected host:port[,host:port…]',
    );
    expect(() => parseProduceOptions({}, { MAX_MESSAGE_BYTES: 'big' })).toThrow(/\(from MAX_MESSAGE_BYTES\)/);
  });
});

/** A fake kafkajs client recording what the command does with it. */
function fakeKafka({ topics = ['t'], maxMessageBytes = '1048588' } = {}) {
  const calls = {
    config: undefined as KafkaConfig | undefined,
    created: [] as unknown[],
    sent: [] as ProducerRecord[],
    producerConfig: undefined as unknown,
  };
  const limits = new Map<string, string>();
  const kafka = {
    admin: () => ({
      connect: async () => {},
      disconnect: async () => {},
      createTopics: async (o: { topics: { topic: string; configEntries: { value: string }[] }[] }) => {
        calls.created.push(o);
        for (const t of o.topics) {
          topics.push(t.topic);
          limits.set(t.topic, t.configEntries[0]!.value);
        }
        return true;
      },
      listTopics: async () => topics,
      describeConfigs: async (q: { resources: { name: string }[] }) => ({
        resources: [
          {
            configEntries: [
              {
                configName: 'max.message.bytes',
                configValue: limits.get(q.resources[0]!.name) ?? maxMessageBytes,
              },
            ],
          },
        ],
      }),
    }),
    producer: (config: unknown) => {
      calls.producerConfig = config;
      return {
        connect: async () => {},
        disconnect: async () => {},
        send: async (r: ProducerRecord) => {
          calls.sent.push(r);
          return [];
        },
      };
    },
  };
  const createKafka = (config: KafkaConfig) => {
    calls.config = config;
    return kafka as unknown as Kafka;
  };
  return { calls, createKafka };
}

async function run(args: string[], deps: Parameters<typeof produceCommand>[0] = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const cmd = produceCommand({
    env: {},
    handleSignals: false,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    ...deps,
  })
    .exitOverride()
    .configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => err.push(s) });
  let error: CommanderError | undefined;
  try {
    await cmd.parseAsync(args, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    error = e;
  }
  return { out, err, error };
}

describe('produceCommand', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('exits 2 with one error line for a bad value', async () => {
    const { err, error } = await run(['--rate', 'abc']);
    expect(error?.exitCode).toBe(2);
    expect(err.join('')).toBe(
      'error: --rate "abc" is invalid: expected a number greater than 0 and at most 1000000 (messages per second)\n',
    );
  });

  it('exits 2 for usage errors such as an unknown option', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((code) => {
      throw new Error(`exit ${code}`);
    });
    const cmd = produceCommand({ env: {}, handleSignals: false }).configureOutput({ writeErr: () => {} });
    await expect(cmd.parseAsync(['--bogus'], { from: 'user' })).rejects.toThrow('exit 2');
    expect(exit).toHaveBeenCalledWith(2);
  });

  it('documents every option in --help', async () => {
    const { out, error } = await run(['--help']);
    expect(error?.exitCode).toBe(0);
    const help = out.join('');
    for (const o of [
      '--brokers <list>',
      '--topic <name>',
      '--rate <msgs>',
      '--duration <seconds>',
      '--count <n>',
      '--clients <n>',
      '--profile-share <share>',
      '--duplicate-share <share>',
      '--poison-share <share>',
      '--hostile-key-share <share>',
      '--hot-clients <n>',
      '--hot-share <share>',
      '--seed <n>',
      '--create-topic <partitions>',
      '--max-message-bytes <bytes>',
      '--shuffle-versions [share]',
      '--event-names <list>',
      '--json',
      '--quiet',
      'Examples:',
    ]) {
      expect(help).toContain(o);
    }
  });

  it('--help lists the poison kinds without the hostile keys, which it calls valid data', async () => {
    const help = (await run(['--help'])).out.join('').replace(/\s+/g, ' ');
    const poison = /sends poison of every kind in rotation: ([^.]*)\./.exec(help)?.[1];
    expect(poison).toBe(
      'invalid JSON, a missing field, a wrong-typed field, oversize (over --max-message-bytes), and a null value',
    );
    expect(help).toContain(
      '--hostile-key-share of those also carry a __proto__, constructor or prototype key inside data (top level or nested), which the contract makes an ordinary, valid field',
    );
  });

  it('--hostile-key-share puts __proto__/constructor/prototype keys into that share of valid messages', async () => {
    const hostile = /"(__proto__|constructor|prototype)":/;
    const sent = async (share: string) => {
      const fake = fakeKafka({ topics: ['t'] });
      const { error } = await run(
        [
          '--topic',
          't',
          '--count',
          '400',
          '--rate',
          '100000',
          '--poison-share',
          '0',
          '--duplicate-share',
          '0',
        ].concat(['--hostile-key-share', share, '--quiet']),
        { createKafka: fake.createKafka },
      );
      expect(error).toBeUndefined();
      const values = fake.calls.sent.flatMap((r) => r.messages).map((m) => String(m.value));
      expect(values).toHaveLength(400);
      return values.filter((v) => hostile.test(v)).length;
    };
    expect(await sent('1')).toBe(400);
    expect(await sent('0')).toBe(0);
    const half = await sent('0.5');
    expect(half).toBeGreaterThan(150);
    expect(half).toBeLessThan(250);
  });

  it('creates the topic, sends the plan and prints a JSON summary', async () => {
    const fake = fakeKafka({ topics: [] });
    const { out, err, error } = await run(
      [
        '--topic',
        'new',
        '--create-topic',
        '3',
        '--count',
        '200',
        '--rate',
        '100000',
        '--json',
        '--seed',
        '4',
      ],
      { createKafka: fake.createKafka },
    );
    expect(error).toBeUndefined();
    expect(fake.calls.config?.brokers).toEqual(['localhost:9092']);
    expect(fake.calls.created).toEqual([
      {
        waitForLeaders: true,
        topics: [
          {
            topic: 'new',
            numPartitions: 3,
            configEntries: [{ name: 'max.message.bytes', value: String(2 * 1024 * 1024) }],
          },
        ],
      },
    ]);
    expect(fake.calls.producerConfig).toMatchObject({ idempotent: true, allowAutoTopicCreation: false });
    expect(fake.calls.sent.flatMap((r) => r.messages)).toHaveLength(200);
    expect(fake.calls.sent.every((r) => r.acks === -1 && r.topic === 'new')).toBe(true);
    expect(out).toHaveLength(1);
    const summary = JSON.parse(out[0]!);
    expect(summary).toMatchObject({
      topic: 'new',
      seed: 4,
      total: 200,
      aborted: false,
      oversizeLeftOut: false,
    });
    expect(summary.sent.poison).toBe(2);
    expect(err.join('\n')).toContain('created new with 3 partitions');
  });

  it('leaves oversize poison out when the topic cannot take it, and prints a text summary', async () => {
    const fake = fakeKafka({ topics: ['t'], maxMessageBytes: '1048588' });
    const { out, err, error } = await run(
      ['--topic', 't', '--count', '600', '--rate', '100000', '--poison-share', '0.1', '--quiet'],
      {
        createKafka: fake.createKafka,
      },
    );
    expect(error).toBeUndefined();
    expect(err.join('\n')).toMatch(/leaving oversize poison out/);
    const sizes = fake.calls.sent
      .flatMap((r) => r.messages)
      .map((m) => (m.value as Buffer | null)?.length ?? 0);
    expect(Math.max(...sizes)).toBeLessThan(1024 * 1024);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(
      /^produced 600 records to t in [\d.]+ s \(\d+ msg\/s\): \d+ events, \d+ profiles, 12 duplicates, 60 poison$/,
    );
  });

  it('exits 1 with one line when the topic is missing', async () => {
    const fake = fakeKafka({ topics: [] });
    const { err, error } = await run(['--topic', 'absent', '--count', '5'], {
      createKafka: fake.createKafka,
    });
    expect(error?.exitCode).toBe(1);
    expect(err.join('')).toBe(
      'error: topic absent at localhost:9092 does not exist: create it, or pass --create-topic <partitions>\n',
    );
  });
});
