import { describe, expect, it } from 'vitest';
import { FetchPosition } from '../../../src/worker/fetch-position.js';

describe('FetchPosition: where kafkajs must fetch a partition next', () => {
  it('takes the batch fetched where intake stands (the seek target), then the ones that follow it', () => {
    const p = new FetchPosition('100');
    expect(p.judgeBatch('100')).toEqual({ take: true });
    p.advance('149');
    expect(p.next).toBe('150');
    expect(p.judgeBatch('150')).toEqual({ take: true });
  });

  it('refuses a batch fetched ahead of where intake stands: it was fetched before the seek, and would skip records', () => {
    const p = new FetchPosition('100');
    // The previous run of this partition had fetched up to 400 before it failed and was sought back.
    expect(p.judgeBatch('400')).toEqual({ take: false, from: '100' });
    expect(p.next).toBe('100');
    expect(p.judgeBatch('100')).toEqual({ take: true });
  });

  it('refuses a gap (markers kafkajs resolved itself) that starts ahead of intake, and takes one that starts at it', () => {
    const p = new FetchPosition('100');
    expect(p.judgeGap('400')).toEqual({ take: false, from: '100' });
    expect(p.judgeGap('100')).toEqual({ take: true });
    expect(p.judgeGap(null)).toEqual({ take: true });
  });

  it('takes a batch fetched behind intake (kafkajs fetches again from the committed offset after a rebalance)', () => {
    const p = new FetchPosition('100');
    p.advance('299');
    expect(p.judgeBatch('100')).toEqual({ take: true });
    p.advance('199'); // the runner skips what it has; the position never moves back
    expect(p.next).toBe('300');
  });

  it('takes a batch that keeps coming back ahead of the same place: Kafka no longer has the records before it', () => {
    const p = new FetchPosition('100', 3);
    for (let i = 0; i < 3; i++) expect(p.judgeBatch('500')).toEqual({ take: false, from: '100' });
    expect(p.judgeBatch('500')).toEqual({ take: true, skippedFrom: '100' });
    p.advance('520');
    // A new place: refusals count again from zero.
    expect(p.judgeBatch('900')).toEqual({ take: false, from: '521' });
  });

  it('without a starting offset (nothing committed yet) takes the first batch and follows it', () => {
    const p = new FetchPosition(undefined);
    expect(p.judgeBatch('0')).toEqual({ take: true });
    expect(p.judgeBatch(undefined)).toEqual({ take: true });
    p.advance('9');
    expect(p.judgeBatch('25')).toEqual({ take: false, from: '10' });
  });

  it('compares offsets past 2^53 exactly', () => {
    const p = new FetchPosition('9007199254740993');
    expect(p.judgeBatch('9007199254740994')).toEqual({ take: false, from: '9007199254740993' });
    p.advance('9007199254740993');
    expect(p.next).toBe('9007199254740994');
  });
});
