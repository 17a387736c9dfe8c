import { describe, expect, it } from 'vitest';
import { type ShedChange, ShedController } from '../../../../src/pushback/shedding/controller.js';

describe('ShedController', () => {
  it('tells only what changed, once, as its inputs change', () => {
    let now = 0;
    const changes: ShedChange[] = [];
    const c = new ShedController(
      {
        topics: ['orders', 'reviews'],
        priorities: new Map([['reviews', 'low']]),
        lagHigh: 1000,
        lagLow: 100,
        minShedMs: 10_000,
      },
      (change) => changes.push(change),
      { now: () => now },
    );
    c.setLag(new Map([['orders', 10]]));
    expect(changes).toEqual([]);
    c.setBreaker('open');
    c.setBreaker('half-open'); // still shed: no repeat
    expect(changes).toEqual([{ shed: [{ topic: 'reviews', reason: 'breaker' }], resumed: [] }]);
    c.setManual(new Set(['reviews'])); // now held by hand: relabelled
    expect(changes.at(-1)).toEqual({ shed: [{ topic: 'reviews', reason: 'manual' }], resumed: [] });
    now = 20_000;
    c.setBreaker('closed');
    expect(changes).toHaveLength(2); // the manual decision still holds it
    c.setManual(new Set());
    expect(changes.at(-1)).toEqual({ shed: [], resumed: ['reviews'] });
    expect(c.state.shed.size).toBe(0);
  });
});
