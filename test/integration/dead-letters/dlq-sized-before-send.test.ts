import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaClient, type ReadRecord, readCommitted, waitFor } from '../../../harness/stack.js';
import { spawnWorker, type WorkerProcess, whileRunning } from '../../../harness/worker/process.js';
import { BROKER_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/sinks/kafka/topic-limits.js';
import { caughtUp, pipeline, signupEvent } from '../../support/deployments/tool-deployment.js';

const SMALL_DLQ = 64 * 1024;
const LOWERED_LIMIT = 16 * 1024;
const OVERSIZED = 2 * 1024 * 1024;

/**
 * Dead letters far larger than the DLQ topic takes (2 MB poison), in one commit with small
 * dead letters and triggers, through a real worker: the worker knows the DLQ's
 * max.message.bytes before the first dead letter and truncates before the commit's
 * transaction, so no transaction is aborted and a reader at read_uncommitted (the Java
 * consumer's default; here kcat, a client other than the worker's) finds each dead letter
 * exactly once. Two DLQ limits: 64 KiB, and the broker's default (where a worker that sent
 * the 2 MB records whole inside the transaction showed the aborted copies of the commit's
 * other dead letters). Then the 64 KiB limit is lowered while the worker runs: the next
 * oversized dead letter is refused once inside its transaction (that one abort is expected:
 * the worker learns of the new limit only from the refusal), the limit is read again, and
 * the dead letter is still delivered exactly once.
 */

interface Run {
  readonly setup: Awaited<ReturnType<typeof pipeline>>;
  readonly worker: WorkerProcess;
  /** Poison by source offset: what the DLQ must hold once each. */
  readonly poison: Map<string, { value: string; oversized: boolean }>;
  readonly triggers: string[];
}

const uncommitted = (topic: string) => readCommitted(topic, { isolation: 'read_uncommitted' });
const logLines = (w: WorkerProcess) => readFileSync(w.logFile, 'utf8').trimEnd().split('\n');

function bySourceOffset(records: readonly ReadRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records) {
    const at = r.headers['x-source-offset'] ?? '?';
    out.set(at, (out.get(at) ?? 0) + 1);
  }
  return out;
}

function waitCaughtUp(admin: Admin, kafka: Kafka, run: Pick<Run, 'setup' | 'worker'>, what: string) {
  return whileRunning(
    run.worker,
    what,
    waitFor(what, () => caughtUp(admin, kafka, run.setup.names.topic, run.setup.names.group), {
      timeoutMs: 120_000,
      intervalMs: 500,
    }),
  );
}

/**
 * One record batch of nine signups, each followed by poison of its client: small invalid
 * JSON, a 2 MB signup (over MAX_MESSAGE_BYTES), 2 MB of broken JSON. A real worker commits
 * it; the DLQ takes `dlqMaxBytes`.
 */
async function runMixedBatch(admin: Admin, kafka: Kafka, dlqMaxBytes: number): Promise<Run> {
  const setup = await pipeline('dlq-sized', { partitions: 1, dlqMaxBytes });
  // All of it in one record batch, fetched and committed together.
  await admin.alterConfigs({
    validateOnly: false,
    resources: [
      {
        type: 2,
        name: setup.names.topic,
        configEntries: [{ name: 'max.message.bytes', value: String(32 * 1024 * 1024) }],
      },
    ],
  });
  const messages: { key: string; value: string; oversized?: boolean; poison?: boolean }[] = [];
  const triggers: string[] = [];
  for (let i = 0; i < 9; i++) {
    const id = randomUUID();
    triggers.push(`${id}:welcome`);
    messages.push({ key: `c-${i}`, value: signupEvent(id, `c-${i}`) });
    const bad =
      i % 3 === 0
        ? { value: `{"id": "${randomUUID()}", "not closed`, oversized: false }
        : i % 3 === 1
          ? { value: signupEvent(randomUUID(), `c-${i}`, OVERSIZED), oversized: true }
          : { value: `{"broken": "${'y'.repeat(OVERSIZED)}`, oversized: true };
    messages.push({ key: `c-${i}`, ...bad, poison: true });
  }
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const [sent] = await producer.send({
    topic: setup.names.topic,
    messages: messages.map(({ key, value }) => ({ key, value })),
  });
  await producer.disconnect();
  const base = BigInt(sent!.baseOffset!);
  const poison = new Map<string, { value: string; oversized: boolean }>();
  messages.forEach((m, i) => {
    if (m.poison) poison.set(String(base + BigInt(i)), { value: m.value, oversized: m.oversized === true });
  });
  const worker = spawnWorker(setup.env, `${setup.name}-worker`);
  const run = { setup, worker, poison, triggers };
  await waitCaughtUp(admin, kafka, run, 'the worker to commit the first input');
  return run;
}

/** Each dead letter once at read_uncommitted, truncated to fit, reason and origin kept; no refusal, no abort. */
async function expectEachDeadLetterOnce(run: Run, dlqMaxBytes: number): Promise<void> {
  const { setup, poison, triggers, worker } = run;
  const dlq = await uncommitted(setup.names.dlq);
  const counts = bySourceOffset(dlq);
  expect(dlq).toHaveLength(poison.size);
  expect([...counts.keys()].sort()).toEqual([...poison.keys()].sort());
  expect([...counts.values()].every((n) => n === 1)).toBe(true);
  // The same records at read_committed: nothing of an aborted transaction among them.
  expect(await readCommitted(setup.names.dlq)).toHaveLength(poison.size);

  for (const d of dlq) {
    const original = poison.get(d.headers['x-source-offset']!)!;
    expect(d.headers['x-source-topic']).toBe(setup.names.topic);
    expect(d.headers['x-source-partition']).toBe('0');
    expect(d.headers['x-error-class']).toBe(original.oversized ? 'too-large' : 'invalid-json');
    expect(d.headers['x-error-message']).not.toBe('');
    if (original.oversized) {
      const kept = d.value!.length;
      expect(kept).toBeLessThan(dlqMaxBytes);
      // As much as fits, 64 KiB at most.
      expect(kept).toBeGreaterThanOrEqual(Math.min(64 * 1024, dlqMaxBytes - 4 * 1024));
      expect(d.headers['x-value-truncated']).toBe(
        `${Buffer.byteLength(original.value)} bytes, first ${kept} kept`,
      );
      expect(d.value!.equals(Buffer.from(original.value).subarray(0, kept))).toBe(true);
    } else {
      expect(d.headers['x-value-truncated']).toBeUndefined();
      expect(d.value!.toString()).toBe(original.value);
    }
  }
  // The triggers of the same commits: once each, aborted copies included.
  const sentTriggers = (await uncommitted(setup.names.triggers)).map((t) => JSON.parse(String(t.value)).id);
  expect(sentTriggers.sort()).toEqual([...triggers].sort());

  const lines = logLines(worker);
  expect(
    lines.some((l) => l.includes('records larger than their output topic takes are sent truncated')),
  ).toBe(true);
  expect(
    lines.filter((l) =>
      /abort|MESSAGE_TOO_LARGE|larger than the max message size|too large for its output topic/i.test(l),
    ),
  ).toEqual([]);
}

async function stop(run: Run | undefined): Promise<void> {
  if (run !== undefined && run.worker.child.exitCode === null) {
    run.worker.child.kill('SIGTERM');
    expect(await run.worker.exited).toBe(0);
  }
}

describe('dead letters sized before they are sent (real worker, DLQ read at read_uncommitted)', () => {
  let kafka: Kafka;
  let admin: Admin;
  let small: Run | undefined;
  let brokerDefault: Run | undefined;

  beforeAll(async () => {
    kafka = kafkaClient('dlq-sized-test');
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    await Promise.allSettled([stop(small), stop(brokerDefault)]);
    await admin?.disconnect();
  });

  it('a 64 KiB DLQ: each dead letter exactly once at read_uncommitted, the 2 MB ones truncated to fit, no transaction aborted', async () => {
    small = await runMixedBatch(admin, kafka, SMALL_DLQ);
    await expectEachDeadLetterOnce(small, SMALL_DLQ);
  });

  it("a DLQ at the broker's default limit: each dead letter exactly once at read_uncommitted, no transaction aborted", async () => {
    brokerDefault = await runMixedBatch(admin, kafka, BROKER_DEFAULT_MAX_MESSAGE_BYTES);
    await expectEachDeadLetterOnce(brokerDefault, BROKER_DEFAULT_MAX_MESSAGE_BYTES);
    await stop(brokerDefault);
  });

  it('the DLQ limit lowered while the worker runs: the next oversized dead letter costs one refused transaction and is still delivered once', async () => {
    expect(small, 'the 64 KiB run').toBeDefined();
    const run = small!;
    const { setup } = run;
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2,
          name: setup.names.dlq,
          configEntries: [{ name: 'max.message.bytes', value: String(LOWERED_LIMIT) }],
        },
      ],
    });
    const value = `{"late": "${'z'.repeat(OVERSIZED)}`;
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const [sent] = await producer.send({ topic: setup.names.topic, messages: [{ key: 'c-late', value }] });
    await producer.disconnect();
    const offset = sent!.baseOffset!;
    await waitCaughtUp(admin, kafka, run, 'the worker to commit the late poison');

    const dlq = await uncommitted(setup.names.dlq);
    expect(bySourceOffset(dlq).get(offset)).toBe(1);
    expect(dlq).toHaveLength(run.poison.size + 1);
    const late = dlq.find((d) => d.headers['x-source-offset'] === offset)!;
    expect(late.value!.length).toBeLessThan(LOWERED_LIMIT);
    expect(late.headers['x-value-truncated']).toBe(
      `${Buffer.byteLength(value)} bytes, first ${late.value!.length} kept`,
    );

    // Exactly one refusal, which read the limit again: the one abort this path allows.
    const lines = logLines(run.worker);
    const refused = lines.filter((l) => l.includes('refused a record as too large for its output topic'));
    expect(refused).toHaveLength(1);
    expect(JSON.parse(refused[0]!)).toMatchObject({ limitLowered: true });
    const changed = lines.filter((l) => l.includes("an output topic's max.message.bytes changed"));
    expect(changed.map((l) => JSON.parse(l))).toMatchObject([
      { outputTopic: setup.names.dlq, maxMessageBytes: LOWERED_LIMIT, previousMaxMessageBytes: SMALL_DLQ },
    ]);
  });
});
