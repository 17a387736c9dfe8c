import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Client } from '@elastic/elasticsearch';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esClient, kafkaClient, readCommitted } from '../../../harness/stack.js';
import { runCli } from '../../../harness/worker/cli.js';
import { pipeline, runWorkerUntilCaughtUp, signupEvent } from '../../support/deployments/tool-deployment.js';

const SMALL_LIMIT = '100000';
const LARGE_LIMIT = '1048576';

/**
 * `rxingest dlq` on the real stack: events dead-lettered because MAX_MESSAGE_BYTES was too
 * small (some of them too large for the DLQ topic too, so the dead letter holds a truncated
 * copy, sent in the same commit as the triggers of the events before them) are indexed, and
 * trigger once, after the limit is raised and `dlq replay --class too-large` runs; a second
 * replay changes no count in Elasticsearch or the triggers topic; records still poison are
 * not put back, and a forced replay of one counts its attempts.
 */
describe('rxingest dlq on the real stack', () => {
  let kafka: Kafka;
  let admin: Admin;
  let es: Client;
  let setup: Awaited<ReturnType<typeof pipeline>>;
  const large: string[] = [];
  const small: string[] = [];
  /** The 300 kB originals (too large for the DLQ topic), by id. */
  const oversized = new Map<string, string>();
  let workerLog: string;

  const counts = async () => {
    await es.indices.refresh({ index: setup.names.events });
    const events = (await es.count({ index: setup.names.events })).count;
    const triggers = (await readCommitted(setup.names.triggers)).map(
      (t) => JSON.parse(String(t.value)).id as string,
    );
    const dlq = await readCommitted(setup.names.dlq);
    const ends = (await admin.fetchTopicOffsets(setup.names.topic)).map((o) => o.high).join(',');
    return { events, triggers, dlq, ends };
  };

  beforeAll(async () => {
    kafka = kafkaClient('dlq-test');
    admin = kafka.admin();
    await admin.connect();
    es = esClient();
    // The DLQ takes 200 kB: the 300 kB events come back truncated, with the original at x-source-offset.
    setup = await pipeline('dlq', {
      partitions: 2,
      dlqMaxBytes: 200_000,
      extraEnv: { MAX_MESSAGE_BYTES: SMALL_LIMIT },
    });
    const event = signupEvent;
    const valid: { key: string; value: string }[] = [];
    for (let i = 0; i < 20; i++) {
      const id = randomUUID();
      small.push(id);
      valid.push({ key: `c-${i % 5}`, value: event(id, `c-${i % 5}`, 10) });
    }
    const poison: { key: string; value: string }[] = [];
    for (const [i, pad] of [150_000, 150_000, 150_000, 300_000, 300_000].entries()) {
      const id = randomUUID();
      large.push(id);
      poison.push({ key: `c-${i}`, value: event(id, `c-${i}`, pad) });
      if (pad === 300_000) oversized.set(id, poison.at(-1)!.value);
    }
    // Still poison whatever the limit: a schema error and invalid JSON.
    poison.push({
      key: 'c-1',
      value: JSON.stringify({ id: randomUUID(), clientId: 'c-1', type: 'event', ts: 'soon' }),
    });
    poison.push({ key: 'c-2', value: '{"id": "not closed' });
    // One send: one record batch per partition, fetched whole, where every poison record
    // follows signup events of its key. An event's offset passes only once it is indexed, and
    // the poison after it is done by then: one commit carries the event's trigger and the
    // dead letter too large for the DLQ topic.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: setup.names.topic, messages: [...valid, ...poison] });
    await producer.disconnect();
    workerLog = await runWorkerUntilCaughtUp(
      admin,
      setup.env,
      setup.names,
      `${setup.names.group}-small-limit`,
    );
  });

  afterAll(async () => {
    await admin?.disconnect();
    await es?.close();
  });

  it('list: one line per dead letter and a count by class; --json; show: headers and pretty JSON', async () => {
    const list = await runCli(['dlq', 'list', '--json'], setup.env);
    expect(list.code, list.stderr).toBe(0);
    const j = JSON.parse(list.stdout);
    expect(j.byClass).toEqual({ 'too-large': 5, 'invalid-json': 1, schema: 1 });
    const tooLarge = j.deadLetters.filter((d: { class: string }) => d.class === 'too-large');
    // The 300 kB ones cannot go whole to a 200 kB DLQ (the worker may truncate the others too).
    expect(tooLarge.filter((d: { truncated: boolean }) => d.truncated).length).toBeGreaterThanOrEqual(2);
    for (const d of tooLarge) {
      expect(d.source.topic).toBe(setup.names.topic);
      expect(d.message).toMatch(/over MAX_MESSAGE_BYTES=100000/);
      expect(d.size).toBeGreaterThan(150_000);
    }

    const text = await runCli(['dlq', 'list', '--class', 'too-large'], setup.env);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toMatch(
      new RegExp(
        `^\\d+:\\d+ +too-large +value is \\d+ bytes, over MAX_MESSAGE_BYTES=100000 +← ${setup.names.topic.replace(/\./g, '\\.')}/\\d+/\\d+ +\\d+\\.\\d KB`,
      ),
    );
    expect(lines[5]).toBe(`5 dead letters in ${setup.names.dlq}: too-large 5`);

    const truncated = tooLarge.find((d: { truncated: boolean }) => d.truncated);
    const show = await runCli(['dlq', 'show', `${truncated.partition}:${truncated.offset}`], setup.env);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('x-error-class: too-large');
    expect(show.stdout).toContain(`x-source-topic: ${setup.names.topic}`);
    expect(show.stdout).toMatch(/x-value-truncated: \d+ bytes, first 65536 kept/);
    expect(show.stdout).toContain('replayed: no');

    const schema = j.deadLetters.find((d: { class: string }) => d.class === 'schema');
    const pretty = await runCli(['dlq', 'show', `${schema.partition}:${schema.offset}`], setup.env);
    expect(pretty.stdout).toContain('x-error-class: schema');
    expect(pretty.stdout).toMatch(/value \(\d+ B, JSON\):\n\{\n {2}"id": /);
    expect(pretty.stdout).toContain('  "ts": "soon"');

    const invalid = j.deadLetters.find((d: { class: string }) => d.class === 'invalid-json');
    const hex = await runCli(['dlq', 'show', `${invalid.partition}:${invalid.offset}`], setup.env);
    expect(hex.stdout).toContain('value (18 B, not JSON: hex):');
    expect(hex.stdout).toMatch(/00000000 {2}7b 22 69 64 22/);

    const none = await runCli(['dlq', 'show', '0:999999'], setup.env);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no dead letter at 0:999999: offset 999999 .* is past its end/);
  });

  it('a commit carrying triggers and a dead letter too large for the DLQ topic: the dead letter truncated, every trigger once', async () => {
    // The worker knew the DLQ topic's limit and cut the large values before the commit's
    // transaction: the broker refused nothing.
    const log = readFileSync(workerLog, 'utf8');
    expect(log).toContain('records larger than their output topic takes are sent truncated');
    expect(log).not.toContain('refused a record as too large');
    const triggers = (await readCommitted(setup.names.triggers)).map((t) => JSON.parse(String(t.value)).id);
    expect(triggers.sort()).toEqual(small.map((id) => `${id}:welcome`).sort());
    const dlq = await readCommitted(setup.names.dlq);
    for (const [id, original] of oversized) {
      const copies = dlq.filter((d) => d.value?.toString('latin1').includes(id));
      expect(copies, `the dead letter of ${id}`).toHaveLength(1);
      const d = copies[0]!;
      expect(d.headers['x-error-class']).toBe('too-large');
      expect(d.headers['x-value-truncated']).toBe(`${Buffer.byteLength(original)} bytes, first 65536 kept`);
      expect(d.value!.equals(Buffer.from(original).subarray(0, 65_536))).toBe(true);
    }
  });

  it('replay --class too-large after raising the limit indexes them, each trigger once; a second replay changes no count', async () => {
    const env = { ...setup.env, MAX_MESSAGE_BYTES: LARGE_LIMIT };
    const before = await counts();
    expect(before.events).toBe(small.length);

    const dry = await runCli(['dlq', 'replay', '--class', 'too-large', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('would replay 5 dead letters');
    expect((await counts()).ends).toBe(before.ends);

    const replay = await runCli(['dlq', 'replay', '--class', 'too-large'], env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout.split('\n')[0]).toBe(
      `replayed 5 dead letters from ${setup.names.dlq} (too-large 5)`,
    );
    await runWorkerUntilCaughtUp(admin, env, setup.names, `${setup.names.group}-large-limit`);

    const after = await counts();
    expect(after.events).toBe(small.length + large.length);
    for (const id of large) expect((await es.get({ index: setup.names.events, id })).found).toBe(true);
    expect(after.triggers.sort()).toEqual([...small, ...large].map((id) => `${id}:welcome`).sort());
    expect(after.dlq).toHaveLength(before.dlq.length);

    // The same command again: nothing is written, nothing changes.
    const again = await runCli(['dlq', 'replay', '--class', 'too-large'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`replayed 0 dead letters from ${setup.names.dlq}`);
    expect(again.stdout).toContain('already replayed (skipped): 5 (too-large 5)');
    await runWorkerUntilCaughtUp(admin, env, setup.names, `${setup.names.group}-again`);
    const final = await counts();
    expect(final.ends).toBe(after.ends);
    expect(final.events).toBe(after.events);
    expect(final.triggers.sort()).toEqual(after.triggers.sort());
    expect(final.dlq).toHaveLength(after.dlq.length);

    // Even a forced replay (the records written again) changes nothing downstream: same ids.
    const forced = await runCli(['dlq', 'replay', '--class', 'too-large', '--force'], env);
    expect(forced.stdout.split('\n')[0]).toBe(
      `replayed 5 dead letters from ${setup.names.dlq} (too-large 5)`,
    );
    await runWorkerUntilCaughtUp(admin, env, setup.names, `${setup.names.group}-forced`);
    const forcedCounts = await counts();
    expect(forcedCounts.ends).not.toBe(after.ends);
    expect(forcedCounts.events).toBe(after.events);
    expect(forcedCounts.triggers.sort()).toEqual(after.triggers.sort());
    expect(forcedCounts.dlq).toHaveLength(after.dlq.length);
  });

  it('records still poison are not put back; a forced replay of one comes back counting the attempt', async () => {
    const env = { ...setup.env, MAX_MESSAGE_BYTES: LARGE_LIMIT };
    const before = await counts();
    const replay = await runCli(['dlq', 'replay'], env);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain('replayed 0 dead letters');
    expect(replay.stdout).toContain(
      'still poison with the current settings (skipped): 2 (invalid-json 1, schema 1)',
    );
    expect((await counts()).ends).toBe(before.ends);

    const forced = await runCli(['dlq', 'replay', '--class', 'schema', '--force'], env);
    expect(forced.stdout.split('\n')[0]).toBe(`replayed 1 dead letter from ${setup.names.dlq} (schema 1)`);
    await runWorkerUntilCaughtUp(admin, env, setup.names, `${setup.names.group}-schema`);
    const dlq = await readCommitted(setup.names.dlq);
    expect(dlq).toHaveLength(before.dlq.length + 1);
    const again = dlq.find((d) => d.headers['x-dead-letter-count'] === '2')!;
    expect(again.headers['x-error-class']).toBe('schema');
    expect(again.headers['x-replay-count']).toBe('1');
    expect(again.headers['x-replay-of']).toMatch(
      new RegExp(`^${setup.names.dlq.replace(/\./g, '\\.')}/\\d+/\\d+$`),
    );

    // Not again without --force; and --max-attempts stops a lineage for good.
    const plain = await runCli(['dlq', 'replay', '--class', 'schema'], env);
    expect(plain.stdout).toContain('replayed 0 dead letters');
    const capped = await runCli(
      ['dlq', 'replay', '--class', 'schema', '--force', '--max-attempts', '2'],
      env,
    );
    expect(capped.stdout).toContain('replayed 0 dead letters');
    expect(capped.stdout).toContain('tried too often (skipped, see --max-attempts): 1 (schema 1)');
  });

  it('reconcile after the replays: nothing missing or different, the replayed dead letters counted as replayed', async () => {
    const res = await runCli(['reconcile', '--json'], { ...setup.env, MAX_MESSAGE_BYTES: LARGE_LIMIT });
    const r = JSON.parse(res.stdout);
    expect(r.examples, res.stdout.slice(0, 2000)).toEqual({});
    expect(res.code).toBe(0);
    expect(r.dlq.replayed).toBe(5);
    expect(r.events.expected).toBe(small.length + large.length);
    expect(r.triggers.found).toBe(small.length + large.length);
  });
});

/** NODE_OPTIONS that load the prototype probe into the tool's process (see test/support/probes/prototype-probe.mjs). */
const PROBE = {
  NODE_OPTIONS:
    `${process.env.NODE_OPTIONS ?? ''} --import=${resolve('test/support/probes/prototype-probe.mjs')}`.trim(),
};
const UNTOUCHED = 'prototype-probe: Object.prototype untouched';

/**
 * A dead letter's headers and value are input: `rxingest dlq` on dead letters whose class is
 * `__proto__` or `constructor` and whose records carry `__proto__`, `constructor` and
 * `prototype` keys in `data` (valid messages by the contract) lists, shows and replays them
 * like any other, and Object.prototype in the tool's process stays as it was. The dead letters
 * are written by the test (the worker never gives such a class); no worker runs here. With them,
 * a truncated copy whose original retention removed (`source-gone`), and the tools' exit 2.
 */
describe('rxingest dlq with hostile classes and keys', () => {
  let kafka: Kafka;
  let admin: Admin;
  let setup: Awaited<ReturnType<typeof pipeline>>;
  /** The source records' values, by the class of their dead letter. */
  const sources: { cls: string; value: string; offset: string }[] = [];
  let goneOffset: string;

  const ev = (data: string) =>
    `{"id":"${randomUUID()}","clientId":"c-h","type":"event","name":"signup","ts":"2026-11-30T12:00:00.000Z","data":${data}}`;
  const pr = (data: string) =>
    `{"id":"${randomUUID()}","clientId":"c-h","type":"profile","version":3,"ts":"2026-11-30T12:00:00.000Z","data":${data}}`;

  beforeAll(async () => {
    kafka = kafkaClient('dlq-hostile-test');
    admin = kafka.admin();
    await admin.connect();
    setup = await pipeline('dlq-hostile', { partitions: 1 });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sendOne = async (topic: string, value: string, headers?: Record<string, string>) => {
      const [meta] = await producer.send({
        topic,
        messages: [{ key: 'c-h', value, partition: 0, ...(headers ? { headers } : {}) }],
      });
      return meta!.baseOffset!;
    };
    // The original of a truncated copy, then removed by retention (deleteRecords).
    const big = ev(`{"note":"${'x'.repeat(3_000)}"}`);
    goneOffset = await sendOne(setup.names.topic, big);
    for (const [cls, value] of [
      ['__proto__', ev('{"__proto__":{"isAdmin":true},"plan":"a"}')],
      ['constructor', pr('{"constructor":{"prototype":{"polluted":true}},"plan":"b"}')],
      ['constructor', ev('{"prototype":{"isAdmin":true},"items":[{"__proto__":{"polluted":1}}]}')],
    ] as const) {
      sources.push({ cls, value, offset: await sendOne(setup.names.topic, value) });
    }
    await admin.fetchTopicMetadata({ topics: [setup.names.topic] }); // deleteTopicRecords needs it loaded
    await admin.deleteTopicRecords({
      topic: setup.names.topic,
      partitions: [{ partition: 0, offset: String(Number(goneOffset) + 1) }],
    });
    const deadLetter = (cls: string, offset: string) => ({
      'x-error-class': cls,
      'x-error-message': `a ${cls} dead letter`,
      'x-source-topic': setup.names.topic,
      'x-source-partition': '0',
      'x-source-offset': offset,
    });
    for (const s of sources) await sendOne(setup.names.dlq, s.value, deadLetter(s.cls, s.offset));
    await sendOne(setup.names.dlq, big.slice(0, 100), {
      ...deadLetter('too-large', goneOffset),
      'x-value-truncated': `${big.length} bytes, first 100 kept`,
    });
    await producer.disconnect();
  });

  afterAll(async () => {
    await admin?.disconnect();
  });

  it('list (--json, --class with --json, text) counts __proto__ and constructor like any class', async () => {
    const list = await runCli(['dlq', 'list', '--json'], { ...setup.env, ...PROBE });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toContain(UNTOUCHED);
    const j = JSON.parse(list.stdout);
    expect(j.total).toBe(4);
    expect(Object.entries(j.byClass).sort()).toEqual([
      ['__proto__', 1],
      ['constructor', 2],
      ['too-large', 1],
    ]);
    expect(j.deadLetters.map((d: { class: string }) => d.class)).toEqual([
      '__proto__',
      'constructor',
      'constructor',
      'too-large',
    ]);

    const only = await runCli(['dlq', 'list', '--class', 'constructor', '--json'], {
      ...setup.env,
      ...PROBE,
    });
    expect(only.code, only.stderr).toBe(0);
    expect(only.stderr).toContain(UNTOUCHED);
    const o = JSON.parse(only.stdout);
    expect(o.total).toBe(2);
    expect(Object.entries(o.byClass)).toEqual([['constructor', 2]]);
    expect(o.deadLetters.map((d: { source: { offset: string } }) => d.source.offset)).toEqual(
      sources.filter((s) => s.cls === 'constructor').map((s) => s.offset),
    );

    const text = await runCli(['dlq', 'list'], { ...setup.env, ...PROBE });
    expect(text.code).toBe(0);
    expect(text.stdout.trim().split('\n').at(-1)).toBe(
      `4 dead letters in ${setup.names.dlq}: __proto__ 1, constructor 2, too-large 1`,
    );
  });

  it('show prints the hostile keys of the value as they are', async () => {
    const j = JSON.parse((await runCli(['dlq', 'list', '--json'], setup.env)).stdout);
    const proto = j.deadLetters.find((d: { class: string }) => d.class === '__proto__');
    const show = await runCli(['dlq', 'show', `${proto.partition}:${proto.offset}`], {
      ...setup.env,
      ...PROBE,
    });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stderr).toContain(UNTOUCHED);
    expect(show.stdout).toContain('x-error-class: __proto__');
    expect(show.stdout).toMatch(
      /"data": \{\n {4}"__proto__": \{\n {6}"isAdmin": true\n {4}\},\n {4}"plan": "a"/,
    );
  });

  it('replay puts the originals back byte for byte, reports the one whose original is gone, and a second replay changes nothing', async () => {
    const dry = await runCli(['dlq', 'replay', '--dry-run'], { ...setup.env, ...PROBE });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toContain(UNTOUCHED);
    expect(dry.stdout.split('\n')).toEqual([
      `would replay 3 dead letters from ${setup.names.dlq} (__proto__ 1, constructor 2)`,
      '  original gone from the source topic (skipped): 1 (too-large 1)',
      expect.stringMatching(
        new RegExp(
          `^ {4}\\d+:\\d+ too-large: offset ${goneOffset} of ${setup.names.topic.replace(/\./g, '\\.')}/0 is gone \\(retention: the log starts at ${Number(goneOffset) + 1}\\)$`,
        ),
      ),
      '',
    ]);
    const before = (await admin.fetchTopicOffsets(setup.names.topic))[0]!.high;

    const replay = await runCli(['dlq', 'replay'], { ...setup.env, ...PROBE });
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stderr).toContain(UNTOUCHED);
    expect(replay.stdout.split('\n')[0]).toBe(
      `replayed 3 dead letters from ${setup.names.dlq} (__proto__ 1, constructor 2)`,
    );
    expect(replay.stdout).toContain('original gone from the source topic (skipped): 1 (too-large 1)');
    const input = await readCommitted(setup.names.topic);
    const replayed = input.filter((r) => r.offset >= Number(before));
    expect(replayed.map((r) => r.value?.toString('utf8')).sort()).toEqual(sources.map((s) => s.value).sort());
    expect(
      replayed.every((r) => r.key === 'c-h' && r.headers['x-replay-of']?.startsWith(setup.names.dlq)),
    ).toBe(true);

    const afterFirst = (await admin.fetchTopicOffsets(setup.names.topic))[0]!.high;
    const again = await runCli(['dlq', 'replay'], { ...setup.env, ...PROBE });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(UNTOUCHED);
    expect(again.stdout).toContain(`replayed 0 dead letters from ${setup.names.dlq}`);
    expect(again.stdout).toContain('already replayed (skipped): 3 (__proto__ 1, constructor 2)');
    expect((await admin.fetchTopicOffsets(setup.names.topic))[0]!.high).toBe(afterFirst);
  });

  it('exit 2 with one line: a bad configuration value (naming the variable), Kafka unreachable', async () => {
    const bad = await runCli(['dlq', 'list'], { ...setup.env, MAX_MESSAGE_BYTES: 'lots' });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(
      /^rxingest dlq list: invalid configuration: MAX_MESSAGE_BYTES="lots" is invalid: expected /,
    );

    const started = Date.now();
    const down = await runCli(
      ['dlq', 'replay', '--dry-run'],
      { ...setup.env, KAFKA_BROKERS: '127.0.0.1:1' },
      { timeoutMs: 60_000 },
    );
    expect(down.code).toBe(2);
    expect(down.stdout).toBe('');
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(/^rxingest dlq replay: cannot run: cannot reach Kafka at 127\.0\.0\.1:1/);
    // A person waits for this: it says so within seconds, not after minutes of retries.
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
