import { describe, expect, it, vi } from 'vitest';
import { ConfigError, configVariables, loadConfig } from '../../../src/config/config.js';

/** The ConfigError `fn` throws; fails if it throws anything else or nothing. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

/** One line: no line break of any kind. */
const expectOneLine = (message: string) => {
  expect(message).not.toMatch(/[\r\n\u2028\u2029]/);
  expect(message.trim()).toBe(message);
};

const noFile = (p: string): string => {
  throw new Error(`unexpected read of ${p}`);
};

describe('loadConfig: defaults', () => {
  it('match the contract when nothing is set', () => {
    const c = loadConfig({}, noFile);
    expect(c.kafka.topics).toEqual(['ingest.events']);
    expect(c.kafka.groupId).toBe('rxingest');
    expect(c.kafka.brokers).toEqual(['localhost:9092']);
    expect(c.elasticsearch.node).toBe('http://localhost:9200');
    expect(c.redis.url).toBe('redis://localhost:6379');
    expect(c.elasticsearch.profilesIndex).toBe('profiles');
    expect(c.elasticsearch.eventsIndex).toBe('events');
    expect(c.kafka.triggersTopic).toBe('ingest.triggers');
    expect(c.kafka.dlqTopic).toBe('ingest.dlq');
    expect(c.graph.maxMessageBytes).toBe(1_048_576);
    expect(c.graph.dedupWindowMs).toBe(10_000);
    expect(c.kafka.progressTopic).toBe('ingest.progress');
    // Sized to redelivery, not to history: Elasticsearch's origin decides ownership.
    expect(c.redis.processedTtlMs).toBe(60 * 60 * 1000);
    expect(c.stallTimeoutMs).toBe(120_000);
    expect(c.triggerRules).toEqual([]);
    // Waiting batches are not joined unless asked: holding them back to save requests did not pay.
    expect(c.graph.batchJoinBytes).toBe(0);
    expect(loadConfig({ BATCH_JOIN_BYTES: '1048576' }, noFile).graph.batchJoinBytes).toBe(1_048_576);
  });

  it('treats an empty variable as unset', () => {
    const c = loadConfig({ INGEST_TOPICS: '', MAX_MESSAGE_BYTES: '', TRIGGER_RULES: '' }, noFile);
    expect(c.kafka.topics).toEqual(['ingest.events']);
    expect(c.graph.maxMessageBytes).toBe(1_048_576);
  });

  it('does not read process.env when given an environment', () => {
    vi.stubEnv('INGEST_GROUP', 'from-process-env');
    try {
      expect(loadConfig({}, noFile).kafka.groupId).toBe('rxingest');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('loadConfig: values', () => {
  it('parses lists, numbers and booleans', () => {
    const c = loadConfig(
      {
        INGEST_TOPICS: ' a.events , b_events,c-events ',
        KAFKA_BROKERS: 'k1:9092,10.0.0.2:19092',
        MAX_MESSAGE_BYTES: ' 2048 ',
        KAFKA_FROM_BEGINNING: '0',
        LOW_WATER: '10',
        HIGH_WATER: '11',
        PROCESSED_TTL_MS: '60000',
        REDIS_LOOKUP_BACKOFF_MS: '0',
      },
      noFile,
    );
    expect(c.kafka.topics).toEqual(['a.events', 'b_events', 'c-events']);
    expect(c.kafka.brokers).toEqual(['k1:9092', '10.0.0.2:19092']);
    expect(c.graph.maxMessageBytes).toBe(2048);
    expect(c.kafka.fromBeginning).toBe(false);
    expect(c.graph.lowWater).toBe(10);
    expect(c.graph.highWater).toBe(11);
    expect(c.redis.processedTtlMs).toBe(60_000);
    expect(c.graph.redisLookupBackoffMs).toBe(0);
    expect(loadConfig({}, noFile).graph.redisLookupBackoffMs).toBe(1000);
  });
});

describe('loadConfig: a bad value is one line naming the variable, the value and what is expected', () => {
  // [variable, bad value, a piece of what the message must say is expected]
  const bad: [string, string, string][] = [
    ['INGEST_TOPICS', 'ingest events', 'a Kafka topic name'],
    ['INGEST_TOPICS', ' , ', 'non-empty list'],
    ['INGEST_GROUP', '   ', 'a non-empty consumer group id'],
    ['KAFKA_BROKERS', 'localhost', 'host:port'],
    ['KAFKA_CLIENT_ID', ' ', 'a non-empty client id'],
    ['KAFKA_SESSION_TIMEOUT_MS', '1000', 'a whole number from 6000 to 300000'],
    ['KAFKA_FROM_BEGINNING', 'yes', 'true or false'],
    ['KAFKA_TOPIC_WAIT_MS', 'soon', 'a whole number from 0 to 3600000'],
    ['KAFKA_MAX_BYTES_PER_PARTITION', '12', 'a whole number from 1024'],
    ['DLQ_TOPIC', 'dead letters', 'a Kafka topic name'],
    ['TRIGGERS_TOPIC', 'triggers/all', 'a Kafka topic name'],
    ['PROGRESS_TOPIC', 'progress ledger', 'a Kafka topic name'],
    ['ES_NODE', 'localhost:9200', 'a URL starting with http:// or https://'],
    ['ES_REQUEST_TIMEOUT_MS', '50', 'a whole number from 100 to 600000'],
    [
      'ES_ENGINE',
      'elasticsearch-7',
      'one of auto, elasticsearch-8, elasticsearch-9, opensearch-2, opensearch-3',
    ],
    ['PROFILES_INDEX', 'Profiles', 'an Elasticsearch index name'],
    ['EVENTS_INDEX', '_events', 'an Elasticsearch index name'],
    ['EVENTS_INDEX', 'events-{dd.MM.yyyy}', 'optionally with one date pattern such as {yyyy.MM.dd}'],
    ['TOMBSTONES', 'drop', 'one of dead-letter, ignore, delete'],
    ['EVENTS_ILM_POLICY', 'two words', 'an ILM policy name (or nothing)'],
    ['REDIS_URL', 'http://localhost:6379', 'a URL starting with redis:// or rediss://'],
    ['PROCESSED_TTL_MS', '7d', 'a whole number from 1000 to 31536000000'],
    ['REDIS_LOOKUP_BACKOFF_MS', '-5', 'a whole number from 0 to 600000'],
    ['MAX_MESSAGE_BYTES', '1MiB', 'a whole number from 64 to 104857600'],
    ['DEDUP_WINDOW_MS', '-1', 'a whole number from 1 to 86400000'],
    ['CLIENT_IDLE_MS', '0', 'a whole number from 1 to 86400000'],
    ['BATCH_MAX', '99999999999999999999', 'a whole number from 1 to 100000'],
    ['BATCH_MS', '1.5', 'a whole number from 1 to 60000'],
    ['BATCHES_IN_FLIGHT', '0', 'a whole number from 1 to 64'],
    ['BATCH_JOIN_BYTES', '1MiB', 'a whole number from 0 to 268435456'],
    ['HIGH_WATER', '0', 'a whole number from 1 to 10000000'],
    ['HIGH_WATER_BYTES', '1000', 'a whole number from 65536 to 4294967296'],
    ['INTAKE_SHARE_PARTITIONS', '0', 'a whole number from 1 to 1024'],
    ['LOW_WATER', 'ten', 'a whole number from 0 to 10000000'],
    ['COMMIT_INTERVAL_MS', '60001', 'a whole number from 1 to 60000'],
    ['COMMIT_EVERY', '1e3', 'a whole number from 1 to 1000000'],
    ['RETRY_BASE_MS', '0', 'a whole number from 1 to 60000'],
    ['RETRY_MAX_MS', '600001', 'a whole number from 1 to 600000'],
    ['SHUTDOWN_TIMEOUT_MS', '-5', 'a whole number from 0 to 600000'],
    ['STALL_TIMEOUT_MS', '999', 'a whole number from 1000 to 86400000'],
    ['LOG_LEVEL', 'verbose', 'one of fatal, error, warn, info, debug'],
    ['METRICS_PORT', '65536', 'a whole number from 0 to 65535'],
    ['HTTP_PORT', '65536', 'a whole number from 0 to 65535'],
    ['HTTP_HOST', '  ', 'a host name or address to listen on'],
    ['ES_MAX_CONNECTIONS', '0', 'a whole number from 1 to 10000'],
    ['PROFILE_CACHE_SIZE', '-1', 'a whole number from 0 to 10000000'],
    // Push-back (src/config/control-settings.ts; their cross-checks: test/unit/config/control-settings.test.ts)
    ['ES_CONCURRENCY_INITIAL', '0', 'a whole number from 1 to 10000'],
    ['ES_CONCURRENCY_MIN', 'one', 'a whole number from 1 to 10000'],
    ['ES_CONCURRENCY_MAX', '10001', 'a whole number from 1 to 10000'],
    ['ES_CONCURRENCY_DECREASE', '1', 'a ratio between 0 and 1'],
    ['ES_CONCURRENCY_RTT_DEVIATION', '-1', 'a number of standard deviations from 0 to 100'],
    ['BREAKER_WINDOW_MS', '10', 'a whole number from 1000 to 3600000'],
    ['BREAKER_MIN_REQUESTS', '0', 'a whole number from 1 to 1000000'],
    ['BREAKER_FAILURE_RATE', '0', 'a share of failed requests above 0 and at most 1'],
    ['BREAKER_SLOW_CALL_MS', '5s', 'a whole number from 0 to 3600000'],
    ['BREAKER_OPEN_MS', '99', 'a whole number from 100 to 3600000'],
    ['BREAKER_OPEN_MAX_MS', '1e9', 'a whole number from 100 to 3600000'],
    ['BREAKER_PROBES', '0', 'a whole number from 1 to 1000'],
    ['BREAKER_SILENCE_MS', '-1', 'a whole number from 0 to 3600000'],
    ['BREAKER_LIVENESS_TIMEOUT_MS', '50', 'a whole number from 100 to 600000'],
    ['HEAP_PAUSE_RATIO', '1.5', 'a share of the heap limit above 0 and at most 1'],
    ['HEAP_RESUME_RATIO', '1', 'a share of the heap limit above 0 and below 1'],
    ['HEAP_GROWTH_PERCENT', '50%', 'a whole number from 0 to 1000'],
    ['TOPIC_PRIORITIES', 'ingest.events:urgent', 'topic:priority pairs, priority high or low'],
    ['SHED_LAG_HIGH', 'lots', 'a whole number from 0 to 1000000000000'],
    ['SHED_LAG_LOW', '-1', 'a whole number from 0 to 1000000000000'],
    ['SHED_MIN_MS', '1.5', 'a whole number from 0 to 86400000'],
    ['CONTROL_TOPIC', 'control topic', 'a Kafka topic name'],
    ['LAG_INTERVAL_MS', '99', 'a whole number from 100 to 600000'],
    ['PRODUCER_LIMIT_LAG_HIGH', 'x', 'a whole number from 0 to 1000000000000'],
    ['PRODUCER_LIMIT_LAG_LOW', '-5', 'a whole number from 0 to 1000000000000'],
    ['PRODUCER_LIMIT_HEADROOM', '0.95', 'a share from 0 to 0.9'],
    ['PRODUCER_LIMIT_MIN_RATE', '0', 'a whole number from 1 to 10000000'],
    ['PRODUCER_LIMIT_TTL_MS', '999', 'a whole number from 1000 to 3600000'],
    ['HOT_CLIENT_ENTER_RATE', 'hot', 'a whole number from 0 to 10000000'],
    ['HOT_CLIENT_LEAVE_RATE', '-1', 'a whole number from 0 to 10000000'],
    ['HOT_CLIENT_SPREAD', '1', 'a whole number from 2 to 10000'],
    ['HOT_CLIENT_SKETCH_SIZE', '7', 'a whole number from 8 to 1000000'],
    ['HOT_CLIENT_INTERVAL_MS', '999', 'a whole number from 1000 to 3600000'],
    ['CONTROL_KEY_PREFIX', 'rx ingest:', 'a Redis key prefix of 1 to 200 characters without spaces'],
  ];

  it('the table covers every variable that has a bad value', () => {
    // REDIS_KEY_PREFIX takes any string; TRIGGER_RULES (a path) is tested through its file below.
    const untested = Object.keys(configVariables).filter((v) => !bad.some(([name]) => name === v));
    expect(untested.sort()).toEqual(['REDIS_KEY_PREFIX', 'TRIGGER_RULES']);
  });

  it.each(bad)('%s=%j', (name, value, expected) => {
    const { message } = configError(() => loadConfig({ [name]: value }, noFile));
    expectOneLine(message);
    expect(message.startsWith(`${name}=${JSON.stringify(value)} `)).toBe(true);
    expect(message).toContain(' is invalid: expected ');
    expect(message).toContain(expected);
  });

  it('keeps one line when the bad value itself has a line break', () => {
    const { message } = configError(() => loadConfig({ BATCH_MAX: '1\n2' }, noFile));
    expectOneLine(message);
    expect(message).toContain('BATCH_MAX="1\\n2"');
  });
});

describe('loadConfig: the HTTP server', () => {
  it('listens on 0.0.0.0:9464 by default (contract), and HTTP_PORT=0 turns it off', () => {
    expect(loadConfig({}, noFile).http).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(loadConfig({ HTTP_PORT: '0' }, noFile).http.port).toBe(0);
    expect(loadConfig({ HTTP_HOST: '127.0.0.1', HTTP_PORT: '9999' }, noFile).http).toEqual({
      host: '127.0.0.1',
      port: 9999,
    });
  });

  it('still takes the deprecated METRICS_PORT when HTTP_PORT is unset, and HTTP_PORT wins', () => {
    expect(loadConfig({ METRICS_PORT: '9100' }, noFile).http.port).toBe(9100);
    expect(loadConfig({ METRICS_PORT: '9100', HTTP_PORT: '9200' }, noFile).http.port).toBe(9200);
    expect(configError(() => loadConfig({ METRICS_PORT: 'x' }, noFile)).message).toContain(
      'METRICS_PORT is deprecated: use HTTP_PORT',
    );
  });
});

describe('loadConfig: settings that depend on each other', () => {
  it.each([
    ['equal', '100', '100'],
    ['above', '101', '100'],
  ])('rejects LOW_WATER %s HIGH_WATER', (_, low, high) => {
    const { message } = configError(() => loadConfig({ LOW_WATER: low, HIGH_WATER: high }, noFile));
    expectOneLine(message);
    expect(message).toContain(`LOW_WATER=${low}`);
    expect(message).toContain('HIGH_WATER');
    expect(message).toContain(high);
  });

  it('rejects the default LOW_WATER above a lowered HIGH_WATER', () => {
    expect(configError(() => loadConfig({ HIGH_WATER: '800' }, noFile)).message).toMatch(/^LOW_WATER=1000 /);
  });

  it('rejects RETRY_MAX_MS below RETRY_BASE_MS', () => {
    const { message } = configError(() => loadConfig({ RETRY_BASE_MS: '500', RETRY_MAX_MS: '100' }, noFile));
    expectOneLine(message);
    expect(message).toMatch(/^RETRY_MAX_MS=100 .*RETRY_BASE_MS \(500\)/);
  });

  it('rejects an input topic that is the DLQ, the triggers or the progress topic', () => {
    for (const topic of ['ingest.dlq', 'ingest.triggers', 'ingest.progress']) {
      const { message } = configError(() => loadConfig({ INGEST_TOPICS: `ingest.events,${topic}` }, noFile));
      expectOneLine(message);
      expect(message).toMatch(/^INGEST_TOPICS=/);
      expect(message).toContain(topic);
    }
  });
});

describe('loadConfig: TRIGGER_RULES', () => {
  const PATH = '/etc/rxingest/rules.json';
  const rulesFile =
    (text: string) =>
    (p: string): string => {
      if (p !== PATH) throw new Error(`ENOENT: no such file or directory, open '${p}'`);
      return text;
    };

  /** The message for a rules file with this text: one line, naming the variable and the path. */
  const rulesError = (read: (p: string) => string) => {
    const { message } = configError(() => loadConfig({ TRIGGER_RULES: PATH }, read));
    expectOneLine(message);
    expect(message.startsWith(`TRIGGER_RULES=${JSON.stringify(PATH)}`)).toBe(true);
    return message;
  };

  it('loads a valid file', () => {
    const rules = [
      { id: 'welcome', when: { type: 'event', name: 'signup' }, emit: 'send-welcome-email' },
      { id: 'big-spender', when: { name: 'purchase' }, emit: 'notify-sales' },
    ];
    const read = vi.fn(rulesFile(JSON.stringify(rules, null, 2)));
    expect(loadConfig({ TRIGGER_RULES: PATH }, read).triggerRules).toEqual(rules);
    expect(read).toHaveBeenCalledWith(PATH);
  });

  it('loads an empty list', () => {
    expect(loadConfig({ TRIGGER_RULES: PATH }, rulesFile('[]')).triggerRules).toEqual([]);
  });

  it('reports a missing file', () => {
    const message = rulesError(() => {
      throw Object.assign(new Error(`ENOENT: no such file or directory, open '${PATH}'`), { code: 'ENOENT' });
    });
    expect(message).toMatch(/cannot read/);
    expect(message).toContain('ENOENT');
  });

  it.each([
    ['garbage', 'rules: welcome'],
    ['a syntax error on a later line', '[\n  { "id": "welcome",\n    x }\n]'],
    // V8 quotes the text around an unexpected token, line breaks included.
    ['an unexpected token after line breaks', '[\n  {"id": "welcome"},\n  oops\n]'],
    ['a stray brace', '[\n1,\n}'],
    ['an empty file', ''],
  ])('reports invalid JSON (%s) on one line', (_, text) => {
    expect(rulesError(rulesFile(text))).toMatch(/not valid JSON/);
  });

  it.each([
    ['an object instead of a list', '{"id":"welcome","when":{},"emit":"x"}', 'top level'],
    ['a rule without emit', '[{"id":"welcome","when":{"name":"signup"}}]', '0.emit'],
    ['an empty emit', '[{"id":"welcome","when":{"name":"signup"},"emit":""}]', '0.emit'],
    ['a when value that is not a string', '[{"id":"a","when":{"name":1},"emit":"x"}]', '0.when.name'],
    ['a when that is a list', '[{"id":"a","when":["signup"],"emit":"x"}]', '0.when'],
    ['a rule id with ":"', '[{"id":"a:b","when":{},"emit":"x"}]', '0.id'],
    ['a rule that is a string', '["welcome"]', '0'],
    ['a when key with a line break', '[{"id":"a","when":{"na\\nme":1},"emit":"x"}]', '0.when'],
  ])('reports a wrong shape (%s), saying where and what is expected', (_, text, where) => {
    const message = rulesError(rulesFile(text));
    expect(message).toContain('expected [{ "id", "when": { field: value }, "emit" }]');
    expect(message).toContain(`at ${where}`);
  });

  it('reports duplicate rule ids', () => {
    const text = JSON.stringify([
      { id: 'welcome', when: { name: 'signup' }, emit: 'a' },
      { id: 'welcome', when: { name: 'login' }, emit: 'b' },
    ]);
    expect(rulesError(rulesFile(text))).toMatch(/unique/);
  });

  it('does not read anything when TRIGGER_RULES is unset', () => {
    const read = vi.fn(noFile);
    loadConfig({}, read);
    expect(read).not.toHaveBeenCalled();
  });
});

describe('TRIGGER_RULES: fields a rule can match on', () => {
  it('refuses a `when` field that an event does not have, naming it', () => {
    const read = () => JSON.stringify([{ id: 'r', when: { plan: 'pro' }, emit: 'x' }]);
    expect(() => loadConfig({ TRIGGER_RULES: 'rules.json' }, read)).toThrow(
      /TRIGGER_RULES="rules.json".*when.*"plan".*type, name, clientId or id/,
    );
  });
  it('names a rule id used twice', () => {
    const rule = { id: 'twice', when: { name: 'signup' }, emit: 'x' };
    expect(() => loadConfig({ TRIGGER_RULES: 'rules.json' }, () => JSON.stringify([rule, rule]))).toThrow(
      /rule id "twice" is used twice/,
    );
  });
});
