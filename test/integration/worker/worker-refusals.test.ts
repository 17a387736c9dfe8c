import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ValidMessage } from '../../../harness/deployment/expected-state.js';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { freePortFrom } from '../../../harness/ports.js';
import { readCommitted, waitFor } from '../../../harness/stack.js';
import { scrapedSum } from '../../../harness/worker/observation.js';
import { type WorkerProcess, whileRunning } from '../../../harness/worker/process.js';
import type { WorkloadRecord } from '../../../src/generator/workload.js';
import { eventsMapping, profilesMapping } from '../../../src/worker/elasticsearch-setup.js';

/**
 * A real worker against both kinds of refusal (contract, "Output: Elasticsearch"). The
 * indices exist before it starts, made by an operator who mapped `data.amount` as a `long`:
 * a message whose amount is not a number is a refusal of the document itself, a dead letter
 * of class `rejected` with the original bytes and position, and the partition moves on.
 * Then both indices are made read-only: the destination's refusal, so the records wait —
 * nothing dead-lettered, no offset committed past them — and everything lands once the
 * block is lifted. Ends with the independent check of the whole contract state.
 */

/** A mapping of the worker's with `data.amount` mapped as a number (runtime fields for the rest). */
function amountAsLong<M extends { properties: { data: object } }>(mapping: M): object {
  const m = structuredClone(mapping) as unknown as { properties: { data: Record<string, unknown> } };
  m.properties.data.properties = { amount: { type: 'long' } };
  return m;
}
/** What that mapping refuses, told to the oracle: an amount that is not a number. */
const refused = (m: ValidMessage) => Object.hasOwn(m.data, 'amount') && typeof m.data.amount !== 'number';

const TS = '2026-11-30T12:00:00.000Z';
const record = (
  m: Record<string, unknown> & { clientId: string; type: 'event' | 'profile' },
): WorkloadRecord => {
  const id = randomUUID();
  const value = Buffer.from(JSON.stringify({ id, ts: TS, ...m }));
  return { sendAtMs: 0, key: m.clientId, value, kind: m.type, id, clientId: m.clientId };
};
const ev = (clientId: string, name: string, data: Record<string, unknown>) =>
  record({ clientId, type: 'event', name, data });
const upd = (clientId: string, version: number, data: Record<string, unknown>) =>
  record({ clientId, type: 'profile', version, data });

describe('a real worker: what Elasticsearch refuses', () => {
  let p: Pipeline;
  let worker: WorkerProcess;
  let port: number;
  const metric = (name: string, labels: Record<string, string> = {}) => scrapedSum(port, name, labels);

  beforeAll(async () => {
    p = await Pipeline.create('refusals', { partitions: 2 });
    await p.es.indices.create({ index: p.names.events, mappings: amountAsLong(eventsMapping) as never });
    await p.es.indices.create({ index: p.names.profiles, mappings: amountAsLong(profilesMapping) as never });
  });

  afterAll(async () => {
    // A run that failed at the block leaves it on, and a read-only index cannot be deleted.
    await p?.es.indices
      .putSettings({
        index: [p.names.events, p.names.profiles],
        settings: { 'index.blocks.read_only': null } as never,
      })
      .catch(() => undefined);
    await p?.cleanup();
  });

  it('dead-letters documents the mapping refuses (class rejected, original bytes and position), waits at read-only indices without a dead letter or a commit past them, and ends with the contract state', async () => {
    const phase1 = [
      ev('c-1', 'purchase', { amount: 12 }),
      ev('c-1', 'purchase', { amount: 'abc' }), // refused
      ev('c-1', 'signup', { amount: 0 }),
      ev('c-2', 'signup', { amount: 'free' }), // refused: no trigger either
      ev('c-3', 'purchase', { amount: 7, note: 'ok' }),
      upd('p-1', 1, { amount: 5, plan: 'free' }),
      upd('p-1', 2, { amount: 'five' }), // refused: the client's other updates still merge
      upd('p-1', 3, { plan: 'pro' }),
      upd('p-2', 1, { amount: 'none' }), // refused: no profile at all
      ev('c-4', 'purchase', { amount: 3 }),
    ];
    const refusedIds = new Set(['abc', 'free', 'five', 'none'].map((a) => idWithAmount(phase1, a)));
    await p.produce(phase1);
    port = await freePortFrom(9560);
    worker = p.spawn('w', {
      ...p.controlEnv(port),
      // Quick to probe again after the block, so that the test stays short.
      BREAKER_OPEN_MS: '500',
      BREAKER_OPEN_MAX_MS: '1000',
    });
    await whileRunning(worker, 'ingesting the first records', p.waitForEnd(90_000));

    // The refusals are dead letters: rejected, with the reason, the bytes and the position.
    const input = await readCommitted(p.names.topic);
    const dlq = await readCommitted(p.names.dlq);
    expect(dlq.map((d) => JSON.parse(String(d.value)).id).sort()).toEqual([...refusedIds].sort());
    for (const d of dlq) {
      expect(d.headers['x-error-class']).toBe('rejected');
      expect(d.headers['x-error-message']).toMatch(
        /document_parsing_exception.*\[data\.amount\] of type \[long\]/,
      );
      expect(d.headers['x-source-topic']).toBe(p.names.topic);
      const at = input.find(
        (r) =>
          r.partition === Number(d.headers['x-source-partition']) &&
          r.offset === Number(d.headers['x-source-offset']),
      );
      expect(at, 'the record the dead letter points at').toBeDefined();
      expect(d.key).toBe(at!.key);
      expect(d.value!.equals(at!.value!), 'the original value bytes').toBe(true);
    }
    expect(await metric('rxingest_dead_letters_total', { class: 'rejected' })).toBe(refusedIds.size);

    // The destination refuses now: both indices read-only.
    const indices = [p.names.events, p.names.profiles];
    await p.es.indices.putSettings({ index: indices, settings: { 'index.blocks.read_only': true } });
    const committed = await p.committedTotal();
    const retried = await metric('rxingest_retries_total', { target: 'elasticsearch' });
    const phase2 = [
      ev('c-1', 'purchase', { amount: 40 }),
      ev('c-5', 'signup', { amount: 1 }),
      ev('c-3', 'purchase', { amount: 9 }),
      upd('p-1', 4, { tier: 'gold' }),
      upd('p-3', 1, { plan: 'team', amount: 2 }),
    ];
    await p.produce(phase2);
    // Several rounds of refusals (the retry policy's backoff between them; commits every 200 ms),
    // or a worker that took them for the records' fault and moved on (the checks below say so).
    await whileRunning(
      worker,
      'waiting at the read-only indices',
      waitFor(
        'the worker to retry the refused writes',
        async () =>
          (await metric('rxingest_retries_total', { target: 'elasticsearch' })) >=
            retried + 3 * phase2.length || (await p.committedTotal()) > committed,
        { timeoutMs: 30_000, intervalMs: 200 },
      ),
    );
    expect(await p.committedTotal(), 'no offset committed past the refused records').toBe(committed);
    expect(await p.committedAtEnd()).toBe(false);
    expect(await readCommitted(p.names.dlq), 'no dead letter for a refusal of the destination').toHaveLength(
      refusedIds.size,
    );

    await p.es.indices.putSettings({ index: indices, settings: { 'index.blocks.read_only': null } as never });
    await whileRunning(worker, 'ingesting after the block', p.waitForEnd(90_000));
    await p.assertContract(p.expected({ refused }));
    expect(await metric('rxingest_dead_letters_total')).toBe(refusedIds.size);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  }, 180_000);
});

/** The id of the one record whose data.amount is `amount`. */
function idWithAmount(records: readonly WorkloadRecord[], amount: string): string {
  const found = records.filter((r) => JSON.parse(String(r.value)).data.amount === amount);
  if (found.length !== 1) throw new Error(`expected one record with amount ${amount}`);
  return found[0]!.id!;
}
