import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { Pipeline, type Servers } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { readCommitted, waitFor } from '../../../harness/stack.js';
import { indexDialect } from '../../../src/worker/index-dialect.js';
import { finish, type ScenarioReport, type Size, stopGracefully, whenCommitted } from './common.js';

/**
 * A rebuild: after a full run, the worker stops, both indices are deleted, the group's
 * offsets are reset to the beginning and the worker starts again (and is killed once in the
 * middle of it). Every document comes back; no trigger and no dead letter goes out twice.
 */
export async function rebuildByOffsetReset(size: Size, seed = 77): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-rebuild');
  try {
    const first = p.spawn('first');
    await p.produce(traffic(seed, size.messages));
    await p.waitForEnd(size.waitMs);
    await stopGracefully(first);
    const triggersBefore = (await readCommitted(p.names.triggers)).length;
    const deadBefore = (await readCommitted(p.names.dlq)).length;

    await p.es.indices.delete({ index: [p.names.profiles, p.names.events] });
    await p.admin.resetOffsets({ groupId: p.names.group, topic: p.names.topic, earliest: true });
    // Commits every 200 records: with the default cadence (twice a second while draining), a
    // short backlog can be committed whole between two looks at the 40% mark.
    const second = p.spawn('rebuild', { COMMIT_EVERY: '200' });
    await whenCommitted(p, size.messages * 0.4, size);
    second.child.kill('SIGKILL');
    await second.exited;
    expect(await p.committedAtEnd(), 'the rebuild was killed before it had committed everything').toBe(false);
    const third = p.spawn('rebuild-again');
    const report = await finish(
      p,
      'index rebuild by offset reset (killed once mid-rebuild)',
      [first, second, third],
      size,
      {
        kills: 1,
      },
    );
    expect((await readCommitted(p.names.triggers)).length).toBe(triggersBefore);
    expect((await readCommitted(p.names.dlq)).length).toBe(deadBefore);
    const log = readFileSync(third.logFile, 'utf8');
    expect(log).toMatch(/after an offset reset/);
    await stopGracefully(third);
    return report;
  } finally {
    await p.cleanup();
  }
}

/**
 * The events index deleted while the worker runs, with auto-create off: what arrives then is
 * neither dead-lettered nor committed past; once the index is created again, it all lands.
 * (Documents of the deleted index are the operator's loss; a rebuild brings them back.)
 * `servers`: another search engine than the stack's (the compatibility run).
 */
export async function eventsIndexDeleted(size: Size, seed = 78, servers?: Servers): Promise<ScenarioReport> {
  const p = await Pipeline.create('faults-noauto', {
    noAutoCreate: true,
    env: { STALL_TIMEOUT_MS: '2000' },
    ...(servers !== undefined && { servers }),
  });
  await p.es.cluster.putSettings({ persistent: { 'action.auto_create_index': '-*-noauto-*,+*' } });
  try {
    const w = p.spawn('w');
    const half = Math.floor(size.messages / 2);
    await p.produce(traffic(seed, half));
    await p.waitForEnd(size.waitMs);
    const deadBefore = (await readCommitted(p.names.dlq)).length;
    const committedBefore = await p.committedTotal();

    await p.es.indices.delete({ index: p.names.events });
    const second = await p.produce(traffic(seed + 1000, size.messages - half));
    const eventsAfter = new Set(second.filter((r) => r.kind === 'event').map((r) => r.id!));
    await waitFor(
      'the worker waiting for the events index',
      () => /event writes failing/.test(readFileSync(w.logFile, 'utf8')),
      {
        timeoutMs: 60_000,
      },
    );
    // Waiting, not giving up: nothing beyond poison is dead-lettered, nothing is committed past the gap.
    expect(await p.committedAtEnd()).toBe(false);
    const deadNow = await readCommitted(p.names.dlq);
    const poisonOfSecond = second.filter((r) => r.kind === 'poison').length;
    expect(deadNow.length).toBeLessThanOrEqual(deadBefore + poisonOfSecond);
    expect(deadNow.every((d) => d.headers['x-error-class'] !== 'rejected')).toBe(true);
    expect(await p.committedTotal()).toBeLessThan(committedBefore + (size.messages - half));

    // Stuck with lag and no commit: said once per partition, and shown in the metric.
    await waitFor(
      'a stalled partition reported',
      () => /partition stalled/.test(readFileSync(w.logFile, 'utf8')),
      {
        timeoutMs: 30_000,
      },
    );
    const { eventsMapping, settings } = indexDialect(servers?.engine);
    await p.es.indices.create({
      index: p.names.events,
      settings: structuredClone(settings) as never,
      mappings: structuredClone(eventsMapping) as never,
    });
    const report = await finish(p, 'events index deleted with auto-create off', [w], size, {
      events: eventsAfter,
      outages: 'events index deleted, created again',
    });
    await waitFor(
      'the stall over',
      () => /partition makes progress again/.test(readFileSync(w.logFile, 'utf8')),
      {
        timeoutMs: 30_000,
      },
    );
    await stopGracefully(w);
    return report;
  } finally {
    await p.es.cluster
      .putSettings({ persistent: { 'action.auto_create_index': null } })
      .catch(() => undefined);
    await p.cleanup();
  }
}
