import { type logCreator, logLevel } from 'kafkajs';
import type { Logger } from 'pino';

/** Routes kafkajs's log lines into the worker's pino logger. */
export function kafkaLogCreator(log: Logger): logCreator {
  const kafkaLog = log.child({ component: 'kafkajs' });
  return () =>
    ({ level, log: entry }) => {
      const { message, ...rest } = entry;
      if (level === logLevel.ERROR) kafkaLog.error(rest, message);
      else if (level === logLevel.WARN) kafkaLog.warn(rest, message);
      else if (level === logLevel.INFO) kafkaLog.info(rest, message);
      else kafkaLog.debug(rest, message);
    };
}
