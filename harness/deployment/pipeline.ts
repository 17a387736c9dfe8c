import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@elastic/elasticsearch';
import { Redis } from 'ioredis';
import { type Admin, type Kafka, Kafka as KafkaClient, logLevel } from 'kafkajs';
import { expect } from 'vitest';
import { createElasticsearch } from '../../src/clients/elasticsearch.js';
import type { SearchEngine } from '../../src/clients/search-engine.js';
import type { ElasticsearchSecurity } from '../../src/config/security.js';
import { runProducer } from '../../src/generator/produce.js';
import type { WorkloadRecord } from '../../src/generator/workload.js';
import {
  createTopicsWithLeaders,
  type ReadRecord,
  readCommitted,
  stackEnv,
  uniqueName,
  waitFor,
} from '../stack.js';
import {
  atShippedDefaults,
  type SpawnWorkerOptions,
  spawnWorker,
  type WorkerProcess,
} from '../worker/process.js';
import {
  type ExpectedState,
  type ExpectedStateOptions,
  expectedState,
  type TriggerRule,
  toPlain,
} from './expected-state.js';

/** What differs from the contract's state (all zero, and committed at the end, when it holds). */
export interface Differences {
  readonly committedAtEnd: boolean;
  readonly missingEvents: number;
  readonly extraEvents: number;
  readonly wrongProfiles: number;
  readonly missingTriggers: number;
  readonly duplicateTriggers: number;
  readonly missingDeadLetters: number;
  readonly duplicateDeadLetters: number;
}

/** Where a pipeline's servers are: the shared stack by default, private ones for fault tests. */
export interface Servers {
  readonly kafkaBrokers: string;
  readonly esNode: string;
  readonly redisUrl: string;
  /** The engine at esNode, when it is not the stack's Elasticsearch 9 (the compatibility run). */
  readonly engine?: SearchEngine;
  /** Credentials and CA for a secured esNode (the test's own client; the worker's come in `env`). */
  readonly esSecurity?: ElasticsearchSecurity;
}

export interface PipelineOptions {
  readonly partitions?: number;
  readonly rules?: readonly TriggerRule[];
  readonly tombstones?: 'dead-letter' | 'ignore' | 'delete';
  /** Extra worker settings. */
  readonly env?: Readonly<Record<string, string>>;
  readonly servers?: Servers;
  /** Name the indices so that the cluster never auto-creates them (see `noAutoCreate`). */
  readonly noAutoCreate?: boolean;
  /** max.message.bytes of the input and DLQ topics (oversize poison must reach the worker). */
  readonly maxMessageBytes?: number;
  /** Workers on the shipped defaults: none of the speed tunings (see SPEED_TUNINGS). */
  readonly asShipped?: boolean;
}

export const WELCOME_RULE: TriggerRule = {
  id: 'welcome',
  when: { type: 'event', name: 'signup' },
  emit: 'send-welcome-email',
};

/**
 * One isolated deployment of rxingest for an end-to-end or fault test: its own topics,
 * group, indices and Redis key prefix on the given servers; real worker processes; and the
 * checks of the contract against an independently computed expected state.
 */
export class Pipeline {
  readonly names: {
    topic: string;
    dlq: string;
    triggers: string;
    progress: string;
    group: string;
    /** The push-back control topic of workers started with controlEnv(). */
    control: string;
    profiles: string;
    events: string;
  };
  readonly env: Record<string, string>;
  readonly servers: Servers;
  readonly kafka: Kafka;
  readonly es: Client;
  readonly admin: Admin;
  readonly rules: readonly TriggerRule[];
  readonly partitions: number;
  private readonly workers: WorkerProcess[] = [];
  private readonly sent: WorkloadRecord[] = [];

  private constructor(
    name: string,
    readonly options: PipelineOptions,
  ) {
    const n = options.noAutoCreate ? `${name}-noauto` : name;
    this.names = {
      topic: `${name}.in`,
      dlq: `${name}.dlq`,
      triggers: `${name}.triggers`,
      progress: `${name}.progress`,
      group: `${name}-group`,
      control: `${name}-group.control`,
      profiles: `${n}-profiles`,
      events: `${n}-events`,
    };
    this.servers = options.servers ?? stackEnv;
    this.rules = options.rules ?? [WELCOME_RULE];
    this.partitions = options.partitions ?? 8;
    this.kafka = new KafkaClient({
      clientId: 'rxingest-test-pipeline',
      brokers: this.servers.kafkaBrokers.split(','),
      logLevel: logLevel.NOTHING,
    });
    this.admin = this.kafka.admin();
    this.es = createElasticsearch(
      { node: this.servers.esNode, ...this.servers.esSecurity },
      { requestTimeout: 60_000 },
      this.servers.engine,
    );
    const rulesFile = join(tmpdir(), `${name}-rules.json`);
    writeFileSync(rulesFile, JSON.stringify(this.rules));
    const env: Record<string, string> = {
      INGEST_TOPICS: this.names.topic,
      INGEST_GROUP: this.names.group,
      DLQ_TOPIC: this.names.dlq,
      TRIGGERS_TOPIC: this.names.triggers,
      PROGRESS_TOPIC: this.names.progress,
      PROFILES_INDEX: this.names.profiles,
      EVENTS_INDEX: this.names.events,
      TRIGGER_RULES: rulesFile,
      KAFKA_BROKERS: this.servers.kafkaBrokers,
      ES_NODE: this.servers.esNode,
      REDIS_URL: this.servers.redisUrl,
      REDIS_KEY_PREFIX: `${name}:`,
      DEDUP_WINDOW_MS: '1000',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      COMMIT_INTERVAL_MS: '200',
      RETRY_MAX_MS: '2000',
      TOMBSTONES: options.tombstones ?? 'dead-letter',
      ...options.env,
    };
    this.env = options.asShipped ? atShippedDefaults(env) : env;
  }

  static async create(prefix: string, options: PipelineOptions = {}): Promise<Pipeline> {
    const p = new Pipeline(uniqueName(prefix), options);
    await p.admin.connect();
    const max = String(options.maxMessageBytes ?? 8 * 1024 * 1024);
    await createTopicsWithLeaders(p.admin, [
      {
        topic: p.names.topic,
        numPartitions: p.partitions,
        configEntries: [{ name: 'max.message.bytes', value: max }],
      },
      { topic: p.names.dlq, numPartitions: 2, configEntries: [{ name: 'max.message.bytes', value: max }] },
      { topic: p.names.triggers, numPartitions: 2 },
    ]);
    return p;
  }

  /**
   * A worker's push-back settings of its own: this deployment's control topic and Redis keys
   * (never the shared defaults other tests use), and /metrics on 127.0.0.1:`port`.
   */
  controlEnv(port: number): Record<string, string> {
    return {
      HTTP_PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      CONTROL_TOPIC: this.names.control,
      CONTROL_KEY_PREFIX: `${this.env.REDIS_KEY_PREFIX}control:`,
    };
  }

  /** Starts a real worker process (`rxingest worker`) for this deployment; `options`: how (see spawnWorker). */
  spawn(label: string, env: Record<string, string> = {}, options: SpawnWorkerOptions = {}): WorkerProcess {
    const w = spawnWorker({ ...this.env, ...env }, `${this.names.group}-${label}`, options);
    this.workers.push(w);
    return w;
  }

  /** Sends the records (idempotent producer) and remembers what was really sent, in order. */
  async produce(records: readonly WorkloadRecord[], topic = this.names.topic): Promise<WorkloadRecord[]> {
    // kafkajs's default 5 retries wait about 9 s in all, as long as KRaft takes to fence a
    // killed leader (broker.session.timeout.ms 9 s): a send to its partitions could give up just
    // before the new leader appears. The same idempotent producer retrying keeps its sequence
    // numbers, so a re-sent batch is not written twice.
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 10, maxRetryTime: 10_000 },
    });
    await producer.connect();
    const sent: WorkloadRecord[] = [];
    try {
      await runProducer({ topic, records }, { producer, onSent: (rs) => sent.push(...rs) });
    } finally {
      await producer.disconnect();
    }
    for (const r of sent) this.sent.push(r);
    return sent;
  }

  /** Replaces what counts as produced (for records sent by other means, e.g. upstream transactions). */
  setProduced(records: readonly WorkloadRecord[]): void {
    this.sent.length = 0;
    for (const r of records) this.sent.push(r);
  }

  /** What the contract says must come out of everything produced so far. */
  expected(options: ExpectedStateOptions = {}): ExpectedState {
    return expectedState(this.sent, { rules: this.rules, tombstones: this.options.tombstones, ...options });
  }

  async committedTotal(): Promise<number> {
    const committed = await this.admin.fetchOffsets({
      groupId: this.names.group,
      topics: [this.names.topic],
    });
    return committed[0]!.partitions.reduce((a, p) => a + Math.max(0, Number(p.offset)), 0);
  }

  /** True when every partition's committed offset is its end (past markers and aborted records: lag 0). */
  async committedAtEnd(): Promise<boolean> {
    const [ends, committed] = await Promise.all([
      this.admin.fetchTopicOffsets(this.names.topic),
      this.admin.fetchOffsets({ groupId: this.names.group, topics: [this.names.topic] }),
    ]);
    const c = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
    // Every partition, not every partition the admin's metadata happened to know (none is "all").
    return ends.length === this.partitions && ends.every((e) => c.get(e.partition) === e.high);
  }

  async waitCommitted(atLeast: number, timeoutMs = 120_000): Promise<void> {
    await this.explained(() =>
      waitFor(`${atLeast} records committed`, async () => (await this.committedTotal()) >= atLeast, {
        timeoutMs,
        intervalMs: 100,
      }),
    );
  }

  /** `intervalMs`: how often to look (a benchmark that times the drain looks more often). */
  async waitForEnd(timeoutMs = 180_000, intervalMs = 500): Promise<void> {
    await this.explained(() =>
      waitFor('committed offsets at the end of every partition', () => this.committedAtEnd(), {
        timeoutMs,
        intervalMs,
      }),
    );
  }

  /** A wait that timed out says where every partition stood and what the workers last logged. */
  private async explained(wait: () => Promise<unknown>): Promise<void> {
    try {
      await wait();
    } catch (err) {
      throw new Error(`${String(err)}\n${await this.diagnosis()}`, { cause: err });
    }
  }

  /** Committed offset and end of each partition, each worker's state and the last lines of its log. */
  async diagnosis(): Promise<string> {
    const lines: string[] = [];
    try {
      const [ends, committed] = await Promise.all([
        this.admin.fetchTopicOffsets(this.names.topic),
        this.admin.fetchOffsets({ groupId: this.names.group, topics: [this.names.topic] }),
      ]);
      const c = new Map(committed[0]!.partitions.map((p) => [p.partition, p.offset]));
      lines.push(
        `partitions: ${ends.map((e) => `${e.partition}: ${c.get(e.partition)}/${e.high}`).join(', ')}`,
      );
    } catch (err) {
      lines.push(`partitions: unreadable (${String(err)})`);
    }
    for (const w of this.workers) {
      const state =
        w.child.exitCode !== null || w.child.signalCode !== null
          ? `exited (${w.child.exitCode ?? w.child.signalCode})`
          : 'running';
      let tail = '';
      try {
        tail = readFileSync(w.logFile, 'utf8').trimEnd().split('\n').slice(-25).join('\n');
      } catch {
        tail = '(no log)';
      }
      lines.push(`worker ${w.logFile} ${state}; last lines:\n${tail}`);
    }
    return lines.join('\n');
  }

  /**
   * The contract, checked from outside: committed offsets at every partition's end; each
   * unique event once with its body and an origin that is a record carrying its id; each
   * profile per field and version; each trigger exactly once (kcat, read_committed); each
   * poison record exactly once in the DLQ with the contract headers (class `rejected` for the
   * documents the oracle was told the mapping refuses).
   */
  async assertContract(
    expected: ExpectedState,
    only: { events?: ReadonlySet<string> } = {},
  ): Promise<Differences> {
    const atEnd = await this.committedAtEnd();
    const { names } = this;
    await this.es.indices.refresh({ index: [names.profiles, names.events], ignore_unavailable: true });

    const events = await searchAll(this.es, names.events);
    const wanted = [...expected.events].filter(([id]) => only.events === undefined || only.events.has(id));
    const idAt = new Map<string, string>();
    /** The input as kcat reads it, by "partition/offset": what the origins and dead letters point at. */
    const inputAt = new Map<string, ReadRecord>();
    for (const r of await readCommitted(names.topic, { brokers: this.servers.kafkaBrokers })) {
      inputAt.set(`${r.partition}/${r.offset}`, r);
      const id = idOfValue(r.value);
      if (id !== undefined) idAt.set(`${r.partition}/${r.offset}`, id);
    }
    const profiles = await searchAll(this.es, names.profiles);
    const triggers = await readCommitted(names.triggers, { brokers: this.servers.kafkaBrokers });
    const ids = triggers.map((t) => JSON.parse(String(t.value)).id as string);
    const idSet = new Set<string>();
    const duplicates: string[] = [];
    for (const id of ids) {
      if (idSet.has(id)) duplicates.push(id);
      idSet.add(id);
    }
    const dlq = await readCommitted(names.dlq, { brokers: this.servers.kafkaBrokers });
    const b64 = (v: Buffer | null) => (v === null ? 'null' : v.toString('base64'));
    const deadValues = new Map<string, number>();
    for (const d of dlq) deadValues.set(b64(d.value), (deadValues.get(b64(d.value)) ?? 0) + 1);
    const poisonValues = new Map<string, number>();
    for (const q of expected.poison)
      poisonValues.set(b64(q.value), (poisonValues.get(b64(q.value)) ?? 0) + 1);
    const differences: Differences = {
      committedAtEnd: atEnd,
      missingEvents: wanted.filter(([id]) => !events.has(id)).length,
      extraEvents: Math.max(0, events.size - wanted.filter(([id]) => events.has(id)).length),
      wrongProfiles: [...expected.profiles].filter(([clientId, doc]) => {
        const got = profiles.get(clientId) as { version: number; data: unknown } | undefined;
        return (
          JSON.stringify({ v: got?.version, d: sortKeys(got?.data) }) !==
          JSON.stringify({ v: doc.version, d: sortKeys(doc.data) })
        );
      }).length,
      missingTriggers: [...expected.triggers.keys()].filter((id) => !idSet.has(id)).length,
      duplicateTriggers: duplicates.length,
      missingDeadLetters: [...poisonValues].reduce(
        (a, [v, n]) => a + Math.max(0, n - (deadValues.get(v) ?? 0)),
        0,
      ),
      duplicateDeadLetters: [...deadValues].reduce(
        (a, [v, n]) => a + Math.max(0, n - (poisonValues.get(v) ?? 0)),
        0,
      ),
    };

    expect(atEnd, 'committed offsets at the end of every partition').toBe(true);
    expect(events.size, 'events indexed').toBe(wanted.length);
    for (const [id, doc] of wanted) {
      const { origin, ...body } = (events.get(id) ?? {}) as {
        origin?: { topic: string; partition: number; offset: number };
      };
      expect(body, `event ${id}`).toEqual(toPlain(doc));
      expect(origin?.topic, `origin of ${id}`).toBe(names.topic);
      expect(idAt.get(`${origin?.partition}/${origin?.offset}`), `origin of ${id}`).toBe(id);
    }

    expect(profiles.size, 'profiles').toBe(expected.profiles.size);
    for (const [clientId, doc] of expected.profiles) {
      const got = profiles.get(clientId) as { version: number; data: unknown } | undefined;
      expect(
        JSON.stringify({ version: got?.version, data: sortKeys(got?.data) }),
        `profile ${clientId}`,
      ).toBe(JSON.stringify({ version: doc.version, data: sortKeys(doc.data) }));
    }

    expect(duplicates, 'triggers published twice').toEqual([]);
    expect(ids.length, 'triggers').toBe(expected.triggers.size);
    for (const t of triggers) {
      const value = JSON.parse(String(t.value));
      expect(value).toEqual(toPlain(expected.triggers.get(value.id)));
      expect(t.key).toBe(value.clientId);
    }

    expect(dlq.map((d) => b64(d.value)).sort(), 'dead letters').toEqual(
      expected.poison.map((p) => b64(p.value)).sort(),
    );
    const refused = new Set(
      expected.poison.filter((q) => q.errorClass === 'rejected').map((q) => b64(q.value)),
    );
    for (const d of dlq) {
      if (refused.has(b64(d.value)))
        expect(d.headers['x-error-class'], 'a refused document').toBe('rejected');
      else expect(d.headers['x-error-class']).toMatch(/^(invalid-json|schema|too-large|tombstone)$/);
      expect(d.headers['x-error-message']?.length).toBeGreaterThan(0);
      expect(d.headers['x-source-topic']).toBe(names.topic);
      expect(Number(d.headers['x-source-partition'])).toBeLessThan(this.partitions);
      expect(d.headers['x-source-offset']).toMatch(/^\d+$/);
      // The x-source-* headers lead to the very record dead-lettered: its key and value bytes
      // (the first bytes only, for a copy the DLQ topic took truncated).
      const at = `${d.headers['x-source-partition']}/${d.headers['x-source-offset']}`;
      const source = inputAt.get(at);
      expect(source, `the input record at ${at} that a dead letter names`).toBeDefined();
      expect(b64(d.keyBytes), `the key of the dead letter of ${at}`).toBe(b64(source!.keyBytes));
      const truncated = d.headers['x-value-truncated'];
      if (truncated === undefined) {
        expect(b64(d.value), `the value of the dead letter of ${at}`).toBe(b64(source!.value));
      } else {
        expect(truncated).toMatch(
          new RegExp(`^${source!.value?.length} bytes, first ${d.value?.length} kept`),
        );
        expect(
          source!.value?.subarray(0, d.value!.length).equals(d.value!),
          `the truncated copy of ${at}`,
        ).toBe(true);
      }
    }
    return differences;
  }

  /** Kills what is still running, deletes the topics, indices and group. */
  async cleanup(): Promise<void> {
    for (const w of this.workers)
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await Promise.allSettled(this.workers.map((w) => w.exited));
    const { names } = this;
    await this.es.indices
      .delete({ index: [names.profiles, names.events], ignore_unavailable: true })
      .catch(() => undefined);
    await this.admin
      .deleteTopics({ topics: [names.topic, names.dlq, names.triggers, names.progress, names.control] })
      .catch(() => undefined);
    await this.admin.deleteGroups([names.group]).catch(() => undefined);
    await this.admin.disconnect();
    await this.es.close();
    await deleteRedisKeys(this.servers.redisUrl, this.env.REDIS_KEY_PREFIX!).catch(() => undefined);
  }
}

/** Removes a deployment's owner marks (SCAN, so the shared Redis is never blocked). */
async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 0, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export function idOfValue(value: Buffer | null): string | undefined {
  try {
    const id = value === null ? undefined : (JSON.parse(value.toString('utf8')) as { id?: unknown })?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** A JSON value with object keys sorted (null-prototype safe), for comparisons that ignore key order. */
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

export async function searchAll(es: Client, index: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  if (!(await es.indices.exists({ index }))) return out;
  let res = await es.search({ index, size: 5000, scroll: '1m', query: { match_all: {} } });
  while (res.hits.hits.length > 0) {
    for (const h of res.hits.hits) out.set(h._id!, h._source);
    res = await es.scroll({ scroll_id: res._scroll_id!, scroll: '1m' });
  }
  if (res._scroll_id) await es.clearScroll({ scroll_id: res._scroll_id });
  return out;
}
