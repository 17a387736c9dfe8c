import { type Bindings, type ChildLoggerOptions, type DestinationStream, type Logger, pino } from 'pino';
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

type Fields = Record<string, unknown>;

/** A child's bindings, with its ancestors', as one object (see uniqueKeys). */
const BOUND = Symbol('rxingest.log.bound');
type Bound = Logger & { [BOUND]?: Fields };

/** pino's own key for the message. */
const MESSAGE_KEY = 'msg';

/**
 * Every line one JSON object with unique keys, by construction.
 *
 * pino writes a line as text pieces: its own keys (`level`, `time`, the base), each child's
 * bindings as they were bound, then the call's fields, then `msg`, with no check between
 * them: a child bound to `{ topic, partition }` that logs `{ topic, partition, offset }`
 * writes `topic` and `partition` twice, and so does a child of a child bound to the same
 * key. Strict parsers, Elasticsearch's JSON processor and several log shippers refuse or
 * mangle such a line.
 *
 * So children made here keep their bindings as an object, and each call writes one
 * object: the bindings, overridden by the call's own fields (the more specific, and what a
 * lenient parser took from the doubled line before). Keys pino writes itself stay pino's;
 * a field by such a name is written as `<name>_` (`level_`, `msg_` next to a message), and
 * overrides a binding of that name as any field does.
 */
function uniqueKeys(reserved: ReadonlySet<string>) {
  /** `fields` added to `into` (a fresh object), a key that `taken` says is pino's as `<key>_`. */
  const merge = (into: Fields, fields: Fields, taken: (k: string) => boolean): Fields => {
    for (const key of Object.keys(fields)) {
      const value = fields[key];
      if (value !== undefined) into[taken(key) ? `${key}_` : key] = value;
    }
    return into;
  };
  const bindingTaken = (k: string) => reserved.has(k) || k === MESSAGE_KEY;
  // Without a prototype, a `__proto__` field is a field like any other.
  const copy = (bound: Fields | undefined): Fields => Object.assign(Object.create(null), bound);
  return {
    bind: (bound: Fields | undefined, bindings: Fields): Fields => merge(copy(bound), bindings, bindingTaken),
    line: (bound: Fields | undefined, fields: Fields, withMessage: boolean): Fields =>
      merge(copy(bound), fields, withMessage ? bindingTaken : (k) => reserved.has(k)),
  };
}

/** The one logger factory: JSON lines with unique keys, credentials redacted by path and by value. */
export function createLogger(options: LoggerOptions, destination?: DestinationStream): Logger {
  const scrub = secretScrubber(options.secrets ?? []);
  const base = options.base ?? { service: 'rxingest' };
  const keys = uniqueKeys(new Set(['level', 'time', ...Object.keys(base)]));
  const settings = {
    level: options.level,
    base,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    hooks: {
      streamWrite: scrub,
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        const [first, ...rest] = args;
        const bound = (this as Bound)[BOUND];
        if (first instanceof Error) {
          // pino's own form: the error under `err`, its message unless one is given.
          method.apply(this, [keys.line(bound, { err: first }, true), ...rest]);
        } else if (typeof first === 'object' || first === undefined) {
          const fields = (first ?? {}) as Fields;
          method.apply(this, [keys.line(bound, fields, rest[0] !== undefined), ...rest]);
        } else if (bound !== undefined) {
          method.apply(this, [keys.line(bound, {}, true), ...args]);
        } else {
          method.apply(this, args);
        }
      },
    },
  };
  const root = (destination === undefined ? pino(settings) : pino(settings, destination)) as Bound;
  // Set on the root, inherited by every child (pino makes a child with Object.create).
  const pinoChild = root.child as unknown as (this: Logger, b: Bindings, o?: ChildLoggerOptions) => Logger;
  const pinoBindings = root.bindings as unknown as (this: Logger) => Bindings;
  Object.assign(root, {
    child(this: Bound, bindings: Bindings, childOptions?: ChildLoggerOptions): Logger {
      const child = pinoChild.call(this, {}, childOptions) as Bound;
      child[BOUND] = keys.bind(this[BOUND], bindings);
      return child;
    },
    bindings(this: Bound): Bindings {
      return { ...pinoBindings.call(this), ...this[BOUND] };
    },
    setBindings(this: Bound, bindings: Bindings): void {
      this[BOUND] = keys.bind(this[BOUND], bindings);
    },
  });
  return root;
}
