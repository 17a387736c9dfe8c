import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';

const noFile = (p: string): string => {
  throw new Error(`unexpected read of ${p}`);
};

const problem = (env: Record<string, string>): string => {
  try {
    loadConfig(env, noFile);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
};

describe('push-back settings', () => {
  it('have working defaults', () => {
    const c = loadConfig({}, noFile).control;
    expect(c.concurrency).toMatchObject({
      initial: 4,
      min: 1,
      max: 32,
      decreaseRatio: 0.9,
      rttDeviationScale: 2.5,
    });
    expect(c.breaker).toMatchObject({ windowMs: 30_000, minRequests: 5, failureRate: 0.5, probes: 3 });
    expect(c.shedding.priorities.size).toBe(0);
    expect(c.shedding.controlTopic).toBe('rxingest.control');
    expect(c.producerLimits.lagHigh).toBeGreaterThan(c.producerLimits.lagLow);
    expect(c.hotClients.enterRatePerSec).toBeGreaterThan(c.hotClients.leaveRatePerSec);
    expect(c.keyPrefix).toBe('rxingest:control:');
    expect(c.heap).toEqual({ pauseRatio: 0.7, resumeRatio: 0.5 });
    expect(c.heapGrowthPercent).toBe(100);
  });

  it('parses topic priorities for input topics', () => {
    const c = loadConfig(
      {
        INGEST_TOPICS: 'orders,inventory,reviews,backfill',
        TOPIC_PRIORITIES: 'orders:high, reviews:low,backfill:low',
      },
      noFile,
    ).control;
    expect([...c.shedding.priorities]).toEqual([
      ['orders', 'high'],
      ['reviews', 'low'],
      ['backfill', 'low'],
    ]);
  });

  it.each([
    [
      { ES_CONCURRENCY_MIN: '8', ES_CONCURRENCY_MAX: '4', ES_CONCURRENCY_INITIAL: '4' },
      /^ES_CONCURRENCY_MIN="8" is invalid: expected at most ES_CONCURRENCY_MAX \(4\)$/,
    ],
    [
      { ES_CONCURRENCY_INITIAL: '64' },
      /^ES_CONCURRENCY_INITIAL="64" is invalid: expected a number from ES_CONCURRENCY_MIN to ES_CONCURRENCY_MAX \(1 to 32\)$/,
    ],
    [
      { HEAP_PAUSE_RATIO: '0.5' },
      /^HEAP_RESUME_RATIO="0.5" is invalid: expected a share below HEAP_PAUSE_RATIO \(0.5\)$/,
    ],
    [
      { BREAKER_OPEN_MS: '9000', BREAKER_OPEN_MAX_MS: '1000' },
      /^BREAKER_OPEN_MAX_MS="1000" is invalid: expected at least BREAKER_OPEN_MS \(9000\)$/,
    ],
    [
      { SHED_LAG_HIGH: '100', SHED_LAG_LOW: '100' },
      /^SHED_LAG_LOW="100" is invalid: expected a number below SHED_LAG_HIGH \(100\)$/,
    ],
    [
      { PRODUCER_LIMIT_LAG_LOW: '60000' },
      /^PRODUCER_LIMIT_LAG_LOW="60000" is invalid: expected a number below PRODUCER_LIMIT_LAG_HIGH \(50000\)$/,
    ],
    [
      { HOT_CLIENT_LEAVE_RATE: '2000' },
      /^HOT_CLIENT_LEAVE_RATE="2000" is invalid: expected a number below HOT_CLIENT_ENTER_RATE \(1000\)$/,
    ],
    [
      { TOPIC_PRIORITIES: 'other:low' },
      /^TOPIC_PRIORITIES="other:low" is invalid: expected topics of INGEST_TOPICS \(other is not one\)$/,
    ],
    [
      { TOPIC_PRIORITIES: 'ingest.events:low,ingest.events:high' },
      /expected each topic once \(ingest.events is given twice\)$/,
    ],
    [
      { CONTROL_TOPIC: 'ingest.dlq' },
      /^CONTROL_TOPIC="ingest.dlq" is invalid: expected a topic other than the input topics/,
    ],
    [{ CONTROL_TOPIC: 'ingest.events' }, /^CONTROL_TOPIC="ingest.events" is invalid/],
  ])('%j: one line naming the variable', (env, message) => {
    expect(problem(env)).toMatch(message);
  });

  it('0 turns lag-driven shedding, producer limits and hot clients off without an order check', () => {
    const c = loadConfig(
      { SHED_LAG_HIGH: '0', PRODUCER_LIMIT_LAG_HIGH: '0', HOT_CLIENT_ENTER_RATE: '0' },
      noFile,
    ).control;
    expect(c.shedding.lagHigh).toBe(0);
    expect(c.producerLimits.lagHigh).toBe(0);
    expect(c.hotClients.enterRatePerSec).toBe(0);
  });
});
