import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Producer } from 'kafkajs';
import { expect } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { freePort } from '../../../harness/ports.js';
import { samples } from '../../../harness/prometheus-text.js';
import { readCommitted, waitFor } from '../../../harness/stack.js';
import { logLines, scrape } from '../../../harness/worker/observation.js';
import type { WorkloadRecord } from '../../../src/generator/workload.js';
import { finish, type ScenarioReport, type Size, stopGracefully } from './common.js';

/**
 * Upstream producers that write the input in transactions, some of them aborted, and one
 * producer killed inside a transaction and fenced by its successor: only committed records
 * are ingested, and the committed offsets still reach every partition's end (past the
 * aborted records and the transaction markers: lag 0).
 */
export async function abortedUpstreamTransactions(size: Size, seed = 79): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-aborted', { partitions: 4 });
  const producers: Producer[] = [];
  try {
    const port = await freePort();
    const w = p.spawn('w', {
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      // rxingest_consumer_lag is the broker's sample (docs/operations.md, Metrics): it reads 0
      // only once the committed offsets are past the aborted records and the markers, at the
      // ends. Sampled often, so that the scenario's end sees it.
      LAG_INTERVAL_MS: '1000',
    });
    const records = traffic(seed, Math.min(size.messages, 20_000));
    const upstream = async (id: string) => {
      const pr = p.kafka.producer({
        transactionalId: `${p.names.group}-upstream-${id}`,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      producers.push(pr);
      await pr.connect();
      return pr;
    };
    const writers = [await upstream('a'), await upstream('b'), await upstream('c')];
    const committed: WorkloadRecord[] = [];
    const chunk = 50;
    for (let i = 0, n = 0; i < records.length; i += chunk, n++) {
      const batch = records.slice(i, i + chunk);
      const writer = writers[n % writers.length]!;
      const abort = n % 4 === 3;
      const tx = await writer.transaction();
      await tx.send({ topic: p.names.topic, messages: batch.map((r) => ({ key: r.key, value: r.value })) });
      if (abort) await tx.abort();
      else {
        await tx.commit();
        committed.push(...batch);
      }
    }
    // One more upstream producer, killed inside a transaction; its successor fences it.
    const zombieId = `${p.names.group}-upstream-zombie`;
    const zombie = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/faults/scenarios/zombie-producer.ts',
        p.servers.kafkaBrokers,
        zombieId,
        p.names.topic,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) =>
      zombie.stdout!.on('data', (d: Buffer) => d.toString().includes('sent') && resolve()),
    );
    zombie.kill('SIGKILL');
    await once(zombie, 'exit');
    const fencer = p.kafka.producer({ transactionalId: zombieId, idempotent: true, maxInFlightRequests: 1 });
    producers.push(fencer);
    await fencer.connect();
    await (await fencer.transaction()).abort();

    p.setProduced(committed);
    const report = await finish(p, 'aborted upstream transactions, a zombie producer fenced', [w], size);
    // What the worker saw is what a read_committed reader sees.
    const input = await readCommitted(p.names.topic);
    expect(input.length).toBe(committed.length);
    // And the worker itself says so: its lag reads 0 on every partition, past the aborted
    // records and the markers (from the next broker sample, so wait a little).
    await waitFor(
      'rxingest_consumer_lag 0 on every partition',
      async () => {
        const lag = samples(await scrape(port), 'rxingest_consumer_lag', { topic: p.names.topic });
        if (lag.length === p.partitions && lag.every((l) => l.value === 0)) return true;
        throw new Error(`lag ${JSON.stringify(lag.map((l) => [l.labels.partition, l.value]))}`);
      },
      { timeoutMs: 15_000 },
    );
    await stopGracefully(w);
    return report;
  } finally {
    await Promise.allSettled(producers.map((pr) => pr.disconnect()));
    await p.cleanup();
  }
}

const encode = (v: unknown) => Buffer.from(JSON.stringify(v));

/** A document's _source parsed with JSON.parse (a `__proto__` key stays an own field). */
async function rawSource(p: Pipeline, index: string, id: string): Promise<{ data: Record<string, unknown> }> {
  const res = await fetch(`${p.servers.esNode}/${index}/_doc/${encodeURIComponent(id)}`);
  expect(res.status, `${index}/${id}`).toBe(200);
  return (JSON.parse(await res.text()) as { _source: { data: Record<string, unknown> } })._source;
}
const ts = '2026-11-30T12:00:00.000Z';

/**
 * Hostile input, each with its documented outcome: invalid JSON, wrong types and missing
 * fields (dead letters: invalid-json / schema), a 5 MB value (too-large), 100,000-deep
 * nesting (schema), invalid UTF-8 (invalid-json), tombstones (tombstone), hostile field names
 * (indexed like any other), a key that disagrees with the body's clientId (the body decides),
 * a field whose type changes between messages (indexed: `data` is mapped as runtime fields).
 * The worker that takes them stays up, with no partition failing, and ingests what follows.
 */
export async function hostileInput(size: Size): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-hostile', { partitions: 2 });
  try {
    const w = p.spawn('w');
    const rec = (value: Buffer | null, key: string | null = 'c-h'): WorkloadRecord => ({
      sendAtMs: 0,
      key,
      value,
      kind: 'poison',
    });
    const hostile: WorkloadRecord[] = [
      rec(Buffer.from('{"id": "x1", "clientId": ')),
      rec(encode({ id: 'x2', clientId: 'c-h', type: 'event', ts, name: 7, data: {} })),
      rec(encode({ id: 'x3', clientId: 'c-h', type: 'profile', ts, data: {} })),
      rec(
        encode({
          id: 'x4',
          clientId: 'c-h',
          type: 'event',
          ts,
          name: 'big',
          data: { blob: 'x'.repeat(5 * 1024 * 1024) },
        }),
      ),
      rec(
        Buffer.from(
          `{"id":"x5","clientId":"c-h","type":"event","ts":"${ts}","name":"deep","data":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
        ),
      ),
      rec(Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
      rec(null),
      rec(null, null),
      rec(
        Buffer.from(
          `{"id":"h1","clientId":"c-h","type":"profile","version":1,"ts":"${ts}","data":{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"p":1}},"plan":"pro"}}`,
        ),
      ),
      rec(
        Buffer.from(
          `{"id":"h2","clientId":"c-h","type":"event","ts":"${ts}","name":"signup","data":{"prototype":{"x":1},"items":[{"constructor":"c"}]}}`,
        ),
      ),
      rec(encode({ id: 'k1', clientId: 'c-body', type: 'event', ts, name: 'signup', data: {} }), 'c-key'),
      rec(encode({ id: 't1', clientId: 'c-t', type: 'event', ts, name: 'purchase', data: { amount: 12 } })),
      rec(
        encode({
          id: 't2',
          clientId: 'c-t',
          type: 'event',
          ts,
          name: 'purchase',
          data: { amount: 'twelve' },
        }),
      ),
    ];
    await p.produce(traffic(81, Math.min(size.messages, 2_000)));
    await p.produce(hostile);
    // Traffic after the hostile records: the same worker must go on ingesting it (finish
    // checks every record of all three parts against the expected state).
    await p.produce(traffic(82, Math.min(size.messages / 2, 1_000)));
    const report = await finish(p, 'hostile input', [w], size);
    const dlq = await readCommitted(p.names.dlq);
    const classOf = (needle: string) =>
      dlq.find((d) => d.value?.subarray(0, 64).toString('latin1').includes(needle))?.headers['x-error-class'];
    expect(classOf('"x1"')).toBe('invalid-json');
    expect(classOf('"x2"')).toBe('schema');
    expect(classOf('"x3"')).toBe('schema');
    expect(classOf('"x4"')).toBe('too-large');
    expect(classOf('"x5"')).toBe('schema');
    const tombstones = dlq.filter((d) => d.value === null);
    expect(tombstones.filter((d) => d.key === 'c-h' || d.key === null).length).toBe(2);
    expect(new Set(tombstones.map((d) => d.headers['x-error-class']))).toEqual(new Set(['tombstone']));
    expect(dlq.find((d) => d.value?.includes(Buffer.from([0xff, 0xfe])))?.headers['x-error-class']).toBe(
      'invalid-json',
    );
    const k1 = await p.es.get<{ clientId: string }>({ index: p.names.events, id: 'k1' });
    expect(k1._source?.clientId).toBe('c-body');
    // The hostile names are stored as ordinary fields, as sent (read raw: the client's parser
    // may refuse or drop a __proto__ key).
    const h1 = (await rawSource(p, p.names.profiles, 'c-h')).data;
    expect(Object.keys(h1).sort()).toEqual(['__proto__', 'constructor', 'plan']);
    expect(JSON.stringify(Object.getOwnPropertyDescriptor(h1, '__proto__')?.value)).toBe('{"isAdmin":true}');
    expect(JSON.stringify(h1.constructor)).toBe('{"prototype":{"p":1}}');
    expect(h1.plan).toBe('pro');
    const h2 = (await rawSource(p, p.names.events, 'h2')).data;
    expect(JSON.stringify(h2)).toBe('{"prototype":{"x":1},"items":[{"constructor":"c"}]}');
    // The worker process that took them is the one that finished (it never exited or
    // restarted), and none of its partitions failed on them.
    expect(w.child.exitCode, 'the worker exited').toBeNull();
    expect(w.child.signalCode, 'the worker was killed').toBeNull();
    const lines = logLines(w);
    expect(lines.filter((l) => l.msg === 'worker started')).toHaveLength(1);
    expect(lines.filter((l) => l.msg.startsWith('partition failed') || l.level >= 50)).toEqual([]);
    await stopGracefully(w);
    return report;
  } finally {
    await p.cleanup();
  }
}
