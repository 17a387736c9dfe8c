import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { ConfigResourceTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { readCommitted, waitFor } from '../../../harness/stack.js';
import { type WorkerProcess, whileRunning } from '../../../harness/worker/process.js';
import type { WorkloadRecord } from '../../../src/generator/workload.js';
import { eventsMapping } from '../../../src/worker/elasticsearch-setup.js';
import { parseStrictObject } from '../../support/logs/strict-json.js';

/**
 * The contract's "one JSON object per line with unique keys", read as a log shipper reads
 * it: a real worker goes through a start, a poison record, a document Elasticsearch refuses,
 * a dead letter too large for its topic (the line that used to carry topic and partition
 * twice), a destination that refuses every write for a while, and a stop; every line it
 * wrote on stdout and stderr must be one JSON object with unique keys at every depth,
 * parsed by a strict parser (test/support/logs/strict-json.ts), and none may be a library's
 * warning. At LOG_LEVEL=debug, so that the per-commit lines of each partition are read too.
 */

/** kafkajs's ConfigResourceTypes.TOPIC (not importable by name from ESM). */
const TOPIC_RESOURCE = 2 as ConfigResourceTypes;
/** The DLQ topic takes less than the oversized poison below. */
const DLQ_MAX_BYTES = 200_000;
const TS = '2026-11-30T12:00:00.000Z';

const record = (clientId: string, value: string | Buffer, kind: WorkloadRecord['kind']): WorkloadRecord => ({
  sendAtMs: 0,
  key: clientId,
  value: Buffer.from(value),
  kind,
  clientId,
});
const event = (clientId: string, data: Record<string, unknown>) =>
  record(
    clientId,
    JSON.stringify({ id: randomUUID(), clientId, type: 'event', name: 'purchase', ts: TS, data }),
    'event',
  );

/** Everything a stream carries, as text; `ended` once it has all of it. */
function collected(stream: Readable | null) {
  let text = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    text += chunk;
  });
  const ended = new Promise<void>((resolve) => (stream ? stream.once('end', resolve) : resolve()));
  return { text: () => text, ended };
}

type Line = Record<string, unknown> & { level: number; msg: string };

describe("a real worker's log, as a strict JSON parser reads it", () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await Pipeline.create('loglines', { partitions: 2 });
    // An operator's mapping with data.amount a number: an amount that is not is refused.
    const data = { type: 'object', dynamic: 'runtime', properties: { amount: { type: 'long' } } };
    await p.es.indices.create({
      index: p.names.events,
      mappings: { properties: { ...eventsMapping.properties, data } } as never,
    });
    await p.admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: TOPIC_RESOURCE,
          name: p.names.dlq,
          configEntries: [{ name: 'max.message.bytes', value: String(DLQ_MAX_BYTES) }],
        },
      ],
    });
  });

  afterAll(async () => {
    await p?.es.indices
      .putSettings({ index: p.names.events, settings: { 'index.blocks.read_only': null } as never })
      .catch(() => undefined);
    await p?.cleanup();
  });

  it('start, poison, a refused document, an oversized dead letter, a refusing destination, stop: every line one object with unique keys, no library warning', async () => {
    await p.produce([
      event('c-1', { amount: 1 }),
      record('c-1', '{"id": "not json', 'poison'),
      event('c-2', { amount: 'abc' }), // refused by the mapping
      record('c-3', `{"oversized": "${'x'.repeat(300_000)}`, 'poison'), // invalid JSON, too large for the DLQ
      event('c-2', { amount: 2 }),
    ]);
    const worker: WorkerProcess = p.spawn('w', { LOG_LEVEL: 'debug' });
    const out = collected(worker.child.stdout);
    const err = collected(worker.child.stderr);
    const stdout = out.text;
    const stderr = err.text;
    const split = () => stdout().split('\n').filter(Boolean);
    // The waits read leniently (a strict refusal would only time them out); the end reads strictly.
    const lines = () => split().map((l) => JSON.parse(l)) as Line[];
    await whileRunning(worker, 'ingesting the first records', p.waitForEnd(90_000));

    // The destination refuses every write (a read-only index) until the block is lifted.
    await p.es.indices.putSettings({ index: p.names.events, settings: { 'index.blocks.read_only': true } });
    await p.produce([event('c-4', { amount: 4 })]);
    await whileRunning(
      worker,
      'writing to a read-only index',
      waitFor('a line saying event writes fail', () =>
        lines().some((l) => l.level === 40 && /failing/.test(l.msg)),
      ),
    );
    await p.es.indices.putSettings({
      index: p.names.events,
      settings: { 'index.blocks.read_only': null } as never,
    });
    await whileRunning(worker, 'ingesting after the block', p.waitForEnd(90_000));
    // Recovered is said by the first batch that needs no retry.
    await p.produce([event('c-5', { amount: 5 })]);
    await whileRunning(
      worker,
      'writing again',
      waitFor('a line saying event writes succeed again', () =>
        lines().some((l) => l.level === 30 && /succeed again/.test(l.msg)),
      ),
    );
    await whileRunning(worker, 'ingesting the last record', p.waitForEnd(90_000));

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    await Promise.all([out.ended, err.ended]);

    // What happened, from outside: three dead letters, one of them truncated.
    const dlq = await readCommitted(p.names.dlq);
    expect(dlq.map((d) => d.headers['x-error-class']).sort()).toEqual([
      'invalid-json',
      'invalid-json',
      'rejected',
    ]);
    expect(dlq.filter((d) => d.headers['x-value-truncated'] !== undefined)).toHaveLength(1);

    // Every line of both streams: one JSON object, unique keys at every depth (parse throws).
    expect(stderr(), 'nothing on stderr').toBe('');
    const all = split().map(parseStrictObject) as Line[];
    expect(stdout().endsWith('\n')).toBe(true);
    for (const l of all) {
      expect(typeof l.level).toBe('number');
      expect(typeof l.time).toBe('number');
      expect(typeof l.msg).toBe('string');
    }

    // No library warning: not kafkajs's partitioner notice, nor any other line kafkajs
    // writes on this path (the oversized dead letter is fitted before it is sent, so the
    // broker refuses nothing).
    expect(stdout()).not.toMatch(/switched default partitioner/);
    expect(all.filter((l) => l.component === 'kafkajs' && l.level >= 40)).toEqual([]);

    // The events, each once, the lines that carry a partition's binding with it.
    const one = (re: RegExp) => {
      const found = all.filter((l) => re.test(l.msg));
      expect(found, String(re)).toHaveLength(1);
      return found[0]!;
    };
    expect(one(/^worker started$/)).toMatchObject({ group: p.names.group });
    // The line the partition's binding used to double.
    const truncating = all.filter((l) =>
      /larger than their output topic takes are sent truncated/.test(l.msg),
    );
    expect(truncating.length).toBeGreaterThan(0);
    for (const l of truncating)
      expect(l).toMatchObject({
        level: 40,
        topic: p.names.topic,
        partition: expect.any(Number),
        offset: expect.any(String),
      });
    expect(all.filter((l) => l.msg === 'committed' && l.topic === p.names.topic).length).toBeGreaterThan(0);
    expect(one(/^stopped$/)).toMatchObject({ deadLetters: 3, indexed: 4 });
  }, 180_000);
});
