import { expect } from 'vitest';
import type { Pipeline } from '../../../harness/deployment/pipeline.js';
import type { WorkerProcess } from '../../../harness/worker/process.js';

/** How big a scenario runs: the short form in `npm test`, the full one in `npm run test:faults`. */
export interface Size {
  /** The longest any one wait of a scenario may take (below the test's timeout, so that a stall is explained). */
  readonly waitMs: number;
  readonly messages: number;
  readonly kills: number;
  /** How long servers stay frozen or stopped (ms). */
  readonly outageMs: number;
  /** The bound on a worker's resident memory (MB). */
  readonly maxRssMb: number;
}

export const SHORT: Size = { waitMs: 100_000, messages: 10_000, kills: 3, outageMs: 6_000, maxRssMb: 700 };
export const FULL: Size = { waitMs: 300_000, messages: 200_000, kills: 10, outageMs: 30_000, maxRssMb: 700 };

/** What every scenario reports (the suite prints these at the end). */
export interface ScenarioReport {
  readonly scenario: string;
  readonly messages: number;
  readonly unique: number;
  readonly poison: number;
  readonly triggers: number;
  readonly kills?: number;
  readonly outages?: string;
  readonly lost: number;
  readonly duplicated: number;
  readonly maxRssMb: number;
}

/** Waits until the committed total passes `target`, then returns (the moment to disturb something). */
export async function whenCommitted(p: Pipeline, target: number, size: Size): Promise<void> {
  await p.waitCommitted(Math.floor(target), size.waitMs);
}

/**
 * The end of every scenario: everything committed to the partitions' ends, the contract's
 * state exactly (profiles per field, events once with origin, triggers exactly once, dead
 * letters once with headers), resident memory bounded. Returns the figures for the report.
 */
export async function finish(
  p: Pipeline,
  scenario: string,
  workers: readonly WorkerProcess[],
  size: Size,
  extra: Partial<ScenarioReport> & { events?: ReadonlySet<string> } = {},
): Promise<ScenarioReport> {
  await p.waitForEnd(size.waitMs);
  const expected = p.expected();
  const d = await p.assertContract(expected, { events: extra.events });
  const maxRssMb = Math.max(...workers.map((w) => w.maxRssMb()));
  expect(maxRssMb, 'peak RSS of a worker (MB)').toBeLessThan(size.maxRssMb);
  const report: ScenarioReport = {
    scenario,
    messages: expected.accepted + expected.poison.length,
    unique: expected.events.size + expected.profiles.size,
    poison: expected.poison.length,
    triggers: expected.triggers.size,
    lost: d.missingEvents + d.wrongProfiles + d.missingTriggers + d.missingDeadLetters,
    duplicated: d.extraEvents + d.duplicateTriggers + d.duplicateDeadLetters,
    maxRssMb: Math.round(maxRssMb),
    ...extra,
  };
  delete (report as { events?: unknown }).events;
  process.stdout.write(`[faults] ${JSON.stringify(report)}\n`);
  return report;
}

export async function stopGracefully(w: WorkerProcess): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return;
  w.child.kill('SIGTERM');
  expect(await w.exited).toBe(0);
}
