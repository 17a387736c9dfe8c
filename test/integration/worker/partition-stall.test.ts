import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { eventsOnly } from '../../../harness/deployment/topic-checks.js';
import { freePortFrom } from '../../../harness/ports.js';
import { sampleValue } from '../../../harness/prometheus-text.js';
import { waitFor } from '../../../harness/stack.js';
import { linesStarting, scrape } from '../../../harness/worker/observation.js';

/** STALL_TIMEOUT_MS's default. */
const STALL_TIMEOUT_MS = 120_000;

let p: Pipeline;

beforeAll(async () => {
  p = await Pipeline.create('stall', { partitions: 1, asShipped: true });
});

afterAll(async () => {
  await p?.es.indices
    .putSettings({ index: p.names.events, settings: { 'index.blocks.write': null } })
    .catch(() => undefined);
  await p?.cleanup();
});

const blockWrites = (on: boolean) =>
  p.es.indices.putSettings({ index: p.names.events, settings: { 'index.blocks.write': on ? true : null } });

describe('the stall warning at the shipped STALL_TIMEOUT_MS', () => {
  it('a partition with lag and no commit is reported once, about 120 s after its last progress, and once when it moves again', async () => {
    const port = await freePortFrom(9570);
    const w = p.spawn('w', p.controlEnv(port));
    const labels = { topic: p.names.topic, partition: '0' };
    await p.produce(eventsOnly(61, 200, 1_000_000));
    await p.waitForEnd(90_000);

    // A write-blocked events index: every write is refused for a destination fault and retried,
    // never dead-lettered; nothing more is committed until the block goes.
    await blockWrites(true);
    const stuck = eventsOnly(62, 200, 1_000_000);
    await p.produce(stuck);
    const stuckAt = Date.now();
    await waitFor(
      'the worker to fail its event writes',
      () => linesStarting(w, 'Elasticsearch: event writes failing').length > 0,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const stalled = await waitFor(
      'the partition reported stalled',
      () => linesStarting(w, 'partition stalled')[0],
      { timeoutMs: STALL_TIMEOUT_MS + 60_000, intervalMs: 500 },
    );
    expect(sampleValue(await scrape(port), 'rxingest_partition_stalled', labels)).toBe(1);
    expect(await p.committedAtEnd(), 'nothing committed past the refused writes').toBe(false);

    await blockWrites(false);
    const unblockedAt = Date.now();
    const moving = await waitFor(
      'the partition to move again',
      () => linesStarting(w, 'partition makes progress again')[0],
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    await p.waitForEnd(60_000);
    expect(sampleValue(await scrape(port), 'rxingest_partition_stalled', labels)).toBe(0);
    process.stdout.write(
      `[partition-stall] ${JSON.stringify({
        stallTimeoutMs: STALL_TIMEOUT_MS,
        idleForMs: stalled.idleForMs,
        reportedAfterStuckMs: stalled.time - stuckAt,
        movingAfterUnblockMs: moving.time - unblockedAt,
      })}\n`,
    );
    // Not before the timeout, and within one check (every 5 s at this timeout) after it.
    expect(stalled.idleForMs as number).toBeGreaterThanOrEqual(STALL_TIMEOUT_MS);
    expect(stalled.time - stuckAt, 'reported after the records got stuck').toBeGreaterThanOrEqual(
      STALL_TIMEOUT_MS - 5_000,
    );
    expect(stalled.idleForMs as number).toBeLessThan(STALL_TIMEOUT_MS + 10_000);
    expect(linesStarting(w, 'partition stalled'), 'said once').toHaveLength(1);
    expect(linesStarting(w, 'partition makes progress again'), 'said once').toHaveLength(1);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 360_000);
});
