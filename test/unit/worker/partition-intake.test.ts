import type { KafkaMessage } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { RawRecord } from '../../../src/model/message.js';
import { OffsetTracker } from '../../../src/model/offset-tracker.js';
import type { OutRecord } from '../../../src/model/out-record.js';
import { PartitionIntake } from '../../../src/worker/partition-intake.js';

const message = (offset: string, key = 'c1'): KafkaMessage =>
  ({
    offset,
    key: Buffer.from(key),
    value: Buffer.from('{}'),
    timestamp: '0',
    attributes: 0,
    headers: {},
  }) as KafkaMessage;

/** An intake whose records register with a tracker, as trackIntake does in the graph. */
function intakeOf(marks = { highWater: 1_000, lowWater: 500, highWaterBytes: 1 << 20 }) {
  const tracker = new OffsetTracker<OutRecord>();
  const seeks: string[] = [];
  const holds: boolean[] = [];
  const clients: string[] = [];
  let tookIn = 0;
  const intake = new PartitionIntake('t', 0, {
    consumer: { seek: ({ offset }) => void seeks.push(offset) },
    tracker,
    marks: () => marks,
    hold: (paused) => void holds.push(paused),
    tookIn: () => void tookIn++,
    observeClient: (_topic, clientId) => void clients.push(clientId),
    log: pino({ level: 'silent' }),
  });
  const taken: RawRecord[] = [];
  intake.records.subscribe((r) => {
    tracker.register(r.offset);
    taken.push(r);
  });
  return { intake, tracker, seeks, holds, clients, taken, tookIn: () => tookIn };
}

const offsets = (records: RawRecord[]) => records.map((r) => (r.gap ? `gap@${r.offset}` : r.offset));

describe('PartitionIntake', () => {
  it('takes nothing before it is open or after it ends, and completes its records when it ends', () => {
    const x = intakeOf();
    x.intake.startAt('0', undefined);
    expect(x.intake.push([message('0')], '0', '1', '0')).toBe(false);
    x.intake.open();
    expect(x.intake.push([message('0')], '0', '1', '0')).toBe(true);
    let completed = false;
    x.intake.records.subscribe({
      complete: () => {
        completed = true;
      },
    });
    x.intake.end();
    expect(completed).toBe(true);
    expect(x.intake.push([message('1')], '1', '2', '1')).toBe(false);
    expect(offsets(x.taken)).toEqual(['0']);
  });

  it('seeks where it starts, and lets each offset in once, in order, counting and sampling each record', () => {
    const x = intakeOf();
    x.intake.startAt('10', '10');
    x.intake.open();
    expect(x.seeks).toEqual(['10']);
    x.intake.push([message('10', 'a'), message('11', 'b')], '11', '20', '10');
    // After a rebalance that kept the partition, kafkajs fetches again from the committed offset.
    x.intake.push([message('10', 'a'), message('11', 'b'), message('12', 'c')], '12', '20', '10');
    expect(offsets(x.taken)).toEqual(['10', '11', '12']);
    expect(x.tookIn()).toBe(3);
    expect(x.clients).toEqual(['a', 'b', 'c']);
    expect(x.intake.firstTaken).toBe('10');
  });

  it('lets a gap in past the last record of a batch whose end is markers, and a gap on its own', () => {
    const x = intakeOf();
    x.intake.startAt('0', undefined);
    x.intake.open();
    x.intake.push([message('0'), message('1')], '3', '10', '0');
    x.intake.gapTo('5', '4');
    x.intake.gapTo('5', '4');
    expect(offsets(x.taken)).toEqual(['0', '1', 'gap@3', 'gap@5']);
  });

  it('lets no gap in below the committed offset before anything was taken', () => {
    const x = intakeOf();
    x.intake.startAt('10', '10');
    x.intake.open();
    x.intake.gapTo('8', '7');
    expect(x.taken).toEqual([]);
  });

  it('refuses a batch fetched before the partition was sought back, and seeks back to where intake stands', () => {
    const x = intakeOf();
    x.intake.startAt('100', '100');
    x.intake.open();
    expect(x.intake.push([message('400')], '400', '500', '400')).toBe(false);
    expect(x.seeks).toEqual(['100', '100']);
    expect(x.taken).toEqual([]);
  });

  it('pauses at HIGH_WATER records in the graph and resumes at LOW_WATER', () => {
    const x = intakeOf({ highWater: 3, lowWater: 1, highWaterBytes: 1 << 20 });
    x.intake.startAt('0', undefined);
    x.intake.open();
    x.intake.push([message('0'), message('1'), message('2')], '2', '3', '0');
    expect(x.holds).toEqual([true]);
    for (const seq of [0, 1]) x.tracker.complete(seq, []);
    const taken = x.tracker.take()!;
    x.tracker.confirm(taken.through);
    x.intake.committedTo(taken.offset);
    x.intake.updatePause();
    expect(x.holds).toEqual([true, false]);
  });

  it('knows the lag from the last fetch and the committed offset, and lifts its pause when shut', () => {
    const x = intakeOf();
    x.intake.startAt('0', undefined);
    expect(x.intake.lag).toBeUndefined();
    x.intake.open();
    x.intake.push([message('0')], '0', '50', '0');
    expect(x.intake.lag).toBe(50);
    x.intake.committedTo('1');
    expect(x.intake.lag).toBe(49);
    x.intake.shut();
    expect(x.intake.isOpen).toBe(false);
    expect(x.holds.at(-1)).toBe(false);
  });
});
