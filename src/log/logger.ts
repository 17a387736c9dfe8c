import { type DestinationStream, type Logger, pino } from 'pino';
import { secretScrubber } from './secrets.js';

/**
 * Where credentials could sit in a logged object: settings objects (a config, a client's
 * options) and request headers in client errors, down to four levels. The ES client also
 * strips its own (`redaction`); the scrubber below catches whatever a path list misses.
 *
 * Leaf paths only: @pinojs/redact 0.4 writes the censor into the caller's object (the live
 * config!) when one path is the parent of another (`*.*.sasl` with `*.*.*.password`).
 */
const depths = ['', '*.', '*.*.', '*.*.*.'];
export const REDACT_PATHS = ['password', 'apiKey', 'headers.authorization'].flatMap((leaf) =>
  depths.map((d) => `${d}${leaf}`),
);

export interface LoggerOptions {
  readonly level: string;
  /** Known secret values (secretValues(config)): scrubbed from every line written. */
  readonly secrets?: readonly string[];
  readonly base?: Record<string, unknown>;
}

/** The one logger factory: JSON lines, credentials redacted by path and by value. */
export function createLogger(options: LoggerOptions, destination?: DestinationStream): Logger {
  const scrub = secretScrubber(options.secrets ?? []);
  const settings = {
    level: options.level,
    base: options.base ?? { service: 'rxingest' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    hooks: { streamWrite: scrub },
  };
  return destination === undefined ? pino(settings) : pino(settings, destination);
}
