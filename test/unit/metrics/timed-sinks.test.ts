import { firstValueFrom, from, Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { SinkStage } from '../../../src/metrics/metric-labels.js';
import { timedCommitSink, timedDocumentStore, timedKnownCopies } from '../../../src/metrics/timed-sinks.js';
import type { DocumentStore, KnownCopies } from '../../../src/sinks/ports.js';

const resolveAfter = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));
const failAfter = (ms: number, err: Error) =>
  new Promise<never>((_, reject) => setTimeout(() => reject(err), ms));

function recorder() {
  const calls: [SinkStage, number][] = [];
  return { calls, observe: (stage: SinkStage, seconds: number) => void calls.push([stage, seconds]) };
}

describe('timed sinks', () => {
  it('report each Redis call under its stage, with how long it took, and pass the answer on', async () => {
    const owners = new Map([['e1', 't/0/5']]);
    const known: KnownCopies = {
      owners: () => resolveAfter(30, owners),
      remember: () => resolveAfter(10, undefined),
    };
    const { calls, observe } = recorder();
    const timed = timedKnownCopies(known, observe);
    expect(await firstValueFrom(from(timed.owners([{ id: 'e1', ts: 'x' }])))).toBe(owners);
    await firstValueFrom(from(timed.remember([])));
    expect(calls.map(([stage]) => stage)).toEqual(['redis-lookup', 'redis-marks']);
    // Timers fire no earlier than asked (a millisecond of rounding aside).
    expect(calls[0]![1]).toBeGreaterThanOrEqual(0.029);
    expect(calls[1]![1]).toBeGreaterThanOrEqual(0.009);
  });

  it('report each write under its kind, failed ones too, and pass the failure on unchanged', async () => {
    const refused = new Error('aborted');
    const store: DocumentStore = {
      createEvents: (events) =>
        resolveAfter(
          20,
          events.map(() => ({ status: 'created' as const })),
        ),
      mergeProfiles: () => failAfter(20, refused),
      deleteProfiles: (ids) =>
        resolveAfter(
          0,
          ids.map(() => ({ status: 'absent' as const })),
        ),
    };
    const { calls, observe } = recorder();
    const timed = timedDocumentStore(store, observe);
    const doc = {
      id: 'e',
      source: {
        clientId: 'c',
        name: 'n',
        ts: 't',
        data: {},
        origin: { topic: 't', partition: 0, offset: 1 },
      },
    };
    expect(await firstValueFrom(from(timed.createEvents([doc, doc])))).toEqual([
      { status: 'created' },
      { status: 'created' },
    ]);
    await expect(firstValueFrom(from(timed.mergeProfiles([])))).rejects.toBe(refused);
    expect(await firstValueFrom(from(timed.deleteProfiles(['c'])))).toEqual([{ status: 'absent' }]);
    expect(calls.map(([stage]) => stage)).toEqual(['write-events', 'write-profiles', 'delete-profiles']);
    expect(calls[1]![1]).toBeGreaterThanOrEqual(0.019);
  });

  it('time an observable answer from its subscription, not from the call', async () => {
    let subscribed = 0;
    const known: KnownCopies = {
      owners: () =>
        new Observable((subscriber) => {
          subscribed = performance.now();
          const t = setTimeout(() => {
            subscriber.next(new Map());
            subscriber.complete();
          }, 20);
          return () => clearTimeout(t);
        }),
      remember: () => [undefined],
    };
    const { calls, observe } = recorder();
    const answer = timedKnownCopies(known, observe).owners([]);
    const called = performance.now();
    await resolveAfter(50, undefined);
    await firstValueFrom(from(answer));
    expect(calls).toHaveLength(1);
    // 20 ms of work after a 50-ms delay before anyone subscribed: the delay is not the call's.
    expect(calls[0]![1]).toBeGreaterThanOrEqual(0.019);
    expect(calls[0]![1]).toBeLessThan((performance.now() - called) / 1000 - 0.03);
    expect(subscribed).toBeGreaterThan(called);
  });

  it('time each commit the same way, and pass its answer on', async () => {
    const seen: number[] = [];
    const sink = timedCommitSink({ commit: () => resolveAfter(15, 'durable') }, (s) => seen.push(s));
    expect(await firstValueFrom(from(sink.commit('7', [])))).toBe('durable');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeGreaterThanOrEqual(0.014);
  });
});
