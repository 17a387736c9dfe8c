import { type logCreator, logLevel } from 'kafkajs';
import type { Logger } from 'pino';

/**
 * Broker answers that kafkajs logs as errors and then retries by itself, and that a busy,
 * healthy worker meets in the normal course: a transaction begun while the last one's
 * markers are still being written (every few commits under load), a group coordinator still
 * loading or just moved. They go to debug: an error line is for an operator to act on. When
 * kafkajs gives up, the failure reaches the worker, which says so itself.
 */
const RETRIED_BY_KAFKAJS = [
  /another concurrent operation on the same transaction/i, // CONCURRENT_TRANSACTIONS
  /coordinator is loading/i, // COORDINATOR_LOAD_IN_PROGRESS
  /not the correct coordinator/i, // NOT_COORDINATOR
];

const retriedByKafkajs = (error: unknown): boolean =>
  typeof error === 'string' && RETRIED_BY_KAFKAJS.some((re) => re.test(error));

/** Routes kafkajs's log lines into the worker's pino logger. */
export function kafkaLogCreator(log: Logger): logCreator {
  const kafkaLog = log.child({ component: 'kafkajs' });
  return () =>
    ({ level, log: entry }) => {
      // pino's `time` says when and the binding says whose: kafkajs's `timestamp` and
      // `logger` would only say it again.
      const { message, timestamp: _when, logger: _whose, ...rest } = entry;
      if (level === logLevel.ERROR && !retriedByKafkajs(rest.error)) kafkaLog.error(rest, message);
      else if (level === logLevel.WARN) kafkaLog.warn(rest, message);
      else if (level === logLevel.INFO) kafkaLog.info(rest, message);
      else kafkaLog.debug(rest, message);
    };
}
