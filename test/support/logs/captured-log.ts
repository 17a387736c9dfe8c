import { createLogger } from '../../../src/log/logger.js';
import { parseStrictObject } from './strict-json.js';

/** One JSON log line as pino wrote it. */
export type LogLine = Record<string, unknown> & { level: number; msg: string };

/**
 * The worker's logger writing into an array (levels: 30 info, 40 warn, 50 error); a line
 * that is not one JSON object with unique keys fails the test that wrote it.
 */
export function capturedLog(level = 'debug') {
  const lines: LogLine[] = [];
  const log = createLogger({ level }, { write: (s: string) => lines.push(parseStrictObject(s) as LogLine) });
  return { log, lines, warnings: () => lines.filter((l) => l.level === 40) };
}

/** A clock tests move by hand. */
export function fakeClock(start = 1_700_000_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}
