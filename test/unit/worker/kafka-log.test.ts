import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLogCreator } from '../../../src/worker/kafka-log.js';
import { capturedLog } from '../../support/logs/captured-log.js';

/** One kafkajs log entry through the worker's log creator; the pino lines it wrote. */
function route(level: logLevel, error?: string) {
  const { log, lines } = capturedLog();
  const logger = kafkaLogCreator(log)(logLevel.DEBUG);
  logger({
    namespace: 'Connection',
    level,
    label: 'ERROR',
    log: {
      timestamp: '2026-12-04T10:00:00.000Z',
      message: 'Response AddPartitionsToTxn(key: 24, version: 1)',
      error,
    },
  });
  return lines;
}

describe('kafkaLogCreator', () => {
  it.each([
    'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing',
    "The coordinator is loading and hence can't process requests for this group",
    'This is not the correct coordinator for this group',
  ])('logs at debug what kafkajs retries by itself: %s', (error) => {
    const lines = route(logLevel.ERROR, error);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 20, component: 'kafkajs', error });
  });

  it('keeps every other kafkajs error an error', () => {
    const lines = route(logLevel.ERROR, 'Not authorized to access topics: [Topic authorization failed]');
    expect(lines).toMatchObject([{ level: 50, component: 'kafkajs' }]);
  });

  it('keeps the other levels as they are', () => {
    expect(route(logLevel.WARN, 'x')[0]?.level).toBe(40);
    expect(route(logLevel.INFO)[0]?.level).toBe(30);
  });
});
