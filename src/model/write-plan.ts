import type { ProfileUpdate } from './message.js';
import { decide, type Entry, type Outcome } from './outcome.js';
import type { MergedUpdate } from './profile-merge.js';

/**
 * What a batch's write to the document store does, decided before any request: which open
 * entries are events to create, and the rounds of profile work. The write stage (the
 * writeDocuments operator) carries the plan out and decides every planned entry from what the
 * store answers.
 */
export interface WritePlan {
  /** The places in the batch of the open events: created in one request. */
  readonly events: readonly number[];
  /** The profile work, one round after the other. */
  readonly rounds: readonly WriteRound[];
}

/**
 * One round of a batch's profile work: every client's updates (their places in the batch, in
 * offset order; clients in the order they first appear), merged and written together, then
 * the tombstones. A client's updates after its tombstone fall in the next round, so they are
 * merged onto nothing.
 */
export interface WriteRound {
  readonly updates: readonly (readonly number[])[];
  readonly deletes: readonly number[];
}

/** Plans the writes of a batch's open entries (see WritePlan); decided entries are left out. */
export function planWrites(batch: readonly Entry[]): WritePlan {
  const events: number[] = [];
  const rounds: { updates: Map<string, number[]>; deletes: number[] }[] = [];
  const roundOf = new Map<string, number>();
  const round = (r: number) => {
    while (rounds.length <= r) rounds.push({ updates: new Map(), deletes: [] });
    return rounds[r]!;
  };
  batch.forEach((e, i) => {
    if (e.outcome !== undefined) return;
    if (e.deletes !== undefined) {
      const r = roundOf.get(e.deletes) ?? 0;
      round(r).deletes.push(i);
      roundOf.set(e.deletes, r + 1);
      return;
    }
    const m = e.message;
    if (m === undefined) return;
    if (m.type === 'event') {
      events.push(i);
      return;
    }
    const updates = round(roundOf.get(m.clientId) ?? 0).updates;
    const places = updates.get(m.clientId);
    if (places === undefined) updates.set(m.clientId, [i]);
    else places.push(i);
  });
  return { events, rounds: rounds.map((r) => ({ updates: [...r.updates.values()], deletes: r.deletes })) };
}

/** Whether a plan has nothing to write. */
export const writesNothing = (plan: WritePlan): boolean =>
  plan.events.length === 0 && plan.rounds.length === 0;

/**
 * A tombstone to apply: its batch is written alone, after every batch before it and before
 * any after it, since a delete and an update of one client in batches side by side could
 * land in either order.
 */
export const writesAlone = (batch: readonly Entry[]): boolean =>
  batch.some((e) => e.outcome === undefined && e.deletes !== undefined);

/** The outcome of the entry at one place in a batch. */
export interface Decision {
  readonly at: number;
  readonly outcome: Outcome;
}

/** The batch with every decision applied (a new array; the batch is left as it was). */
export function decideAt(batch: readonly Entry[], decisions: readonly Decision[]): Entry[] {
  const out = batch.slice();
  for (let i = 0; i < decisions.length; i++) {
    const { at, outcome } = decisions[i]!;
    out[at] = decide(out[at]!, outcome);
  }
  return out;
}

/** Whether an update wins at least one field within its batch (else it is outranked on arrival). */
export function contributes(own: ProfileUpdate, merged: MergedUpdate): boolean {
  const fields = Object.keys(own.data);
  if (fields.length === 0) return merged.version === own.version;
  return fields.some((f) => merged.fields.get(f)?.stamp.id === own.id);
}
