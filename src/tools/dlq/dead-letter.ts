import { countHeader, DEAD_LETTER_COUNT, REPLAY_OF, REPLAY_ROOT } from '../../model/replay.js';
import type { FetchedRecord } from '../topic-reader.js';

/** A dead letter as `rxingest dlq` shows it. */
export interface DeadLetter {
  /** "<dlqTopic>/<partition>/<offset>": what `x-replay-of` and the replay ledger name. */
  readonly position: string;
  readonly partition: number;
  readonly offset: string;
  readonly cls: string;
  readonly message: string;
  readonly source:
    | { readonly topic: string; readonly partition: number; readonly offset: string }
    | undefined;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Size of the original value: the dead letter may hold only its first bytes (`x-value-truncated`). */
  readonly originalSize: number | undefined;
  /** The value, or the key (`x-key-truncated`, a key too large for the DLQ by itself), holds only its first bytes. */
  readonly truncated: boolean;
  readonly timestamp: number;
  /** 1 for a first failure, one more per failed replay. */
  readonly deadLetterCount: number;
  /** The lineage's first dead letter (this one when it was never replayed). */
  readonly root: string;
  readonly replayOf: string | undefined;
  readonly headers: Readonly<Record<string, Buffer | string | undefined>>;
}

const header = (r: FetchedRecord, name: string): string | undefined => {
  const v = Object.hasOwn(r.headers, name) ? r.headers[name] : undefined;
  return v === undefined ? undefined : String(v);
};

/** `x-value-truncated: "<n> bytes, first <k> kept"` → n. */
const TRUNCATED = /^(\d+) bytes, first (\d+) kept/;

export function deadLetterOf(dlqTopic: string, r: FetchedRecord): DeadLetter {
  const position = `${dlqTopic}/${r.partition}/${r.offset}`;
  const topic = header(r, 'x-source-topic');
  const partition = header(r, 'x-source-partition');
  const offset = header(r, 'x-source-offset');
  const truncated = header(r, 'x-value-truncated');
  const t = truncated === undefined ? null : TRUNCATED.exec(truncated);
  return {
    position,
    partition: r.partition,
    offset: r.offset,
    cls: header(r, 'x-error-class') ?? '(none)',
    message: header(r, 'x-error-message') ?? '',
    source:
      topic !== undefined &&
      partition !== undefined &&
      offset !== undefined &&
      /^\d+$/.test(partition) &&
      /^\d+$/.test(offset)
        ? { topic, partition: Number(partition), offset }
        : undefined,
    key: r.key,
    value: r.value,
    originalSize: t ? Number(t[1]) : r.value?.length,
    truncated: truncated !== undefined || header(r, 'x-key-truncated') !== undefined,
    timestamp: r.timestamp,
    deadLetterCount: Math.max(1, countHeader(r.headers, DEAD_LETTER_COUNT)),
    root: header(r, REPLAY_ROOT) ?? position,
    replayOf: header(r, REPLAY_OF),
    headers: r.headers,
  };
}

/**
 * How many of these there are per class, for printing and JSON. The class is a header value,
 * so input: counted in a Map (a class such as `__proto__`, `constructor` or `toString` is a
 * name like any other, never an inherited property), then handed out as own properties of a
 * plain object, which JSON.stringify and Object.entries show as they are. Read it with
 * Object.entries, never by indexing.
 */
export function countByClass(items: Iterable<{ readonly cls: string }>): Record<string, number> {
  const counts = new Map<string, number>();
  for (const { cls } of items) counts.set(cls, (counts.get(cls) ?? 0) + 1);
  return Object.fromEntries(counts);
}

/** "12 B", "3.4 KB", "1.2 MB". */
export function formatBytes(n: number | undefined): string {
  if (n === undefined) return '-';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** "42s", "5m", "3h", "2d". */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** A hex preview: offset, 16 bytes in hex, the printable ones as text. */
export function hexPreview(b: Buffer, max = 256): string {
  const lines: string[] = [];
  for (let at = 0; at < Math.min(b.length, max); at += 16) {
    const chunk = b.subarray(at, Math.min(at + 16, b.length, max));
    const hex = [...chunk].map((x) => x.toString(16).padStart(2, '0')).join(' ');
    const text = [...chunk].map((x) => (x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : '.')).join('');
    lines.push(`${at.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${text}`);
  }
  if (b.length > max) lines.push(`… ${b.length - max} more bytes`);
  return lines.join('\n');
}
