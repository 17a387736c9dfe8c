import { describe, expect, it } from 'vitest';
import { formatReplay } from '../../../src/cli/dlq-command.js';
import type { Config } from '../../../src/config/config.js';
import { countByClass, deadLetterOf } from '../../../src/tools/dlq/dead-letter.js';
import { countOutcomes, type ReplayDecision } from '../../../src/tools/dlq/replay.js';
import type { FetchedRecord } from '../../../src/tools/topic-reader.js';

/** Class names that are properties of every plain object: a dead letter's header may hold any of them. */
const HOSTILE = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype'];

const deadLetter = (cls: string, offset: number) => {
  const headers: Record<string, string> = Object.create(null);
  headers['x-error-class'] = cls;
  headers['x-error-message'] = 'why';
  headers['x-source-topic'] = 'in';
  headers['x-source-partition'] = '0';
  headers['x-source-offset'] = String(offset);
  const r: FetchedRecord = {
    topic: 'dlq',
    partition: 0,
    offset: String(offset),
    key: Buffer.from('c-1'),
    value: Buffer.from('{}'),
    headers,
    timestamp: 1_000,
  };
  return deadLetterOf('dlq', r);
};

describe('dead-letter counts by class (the class is a header value: input)', () => {
  it('counts __proto__, constructor, toString… like any other class, as own properties, leaving Object.prototype alone', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const list = [...HOSTILE, ...HOSTILE, 'schema'].map((cls, i) => deadLetter(cls, i));
    const counts = countByClass(list);

    expect(Object.entries(counts).sort()).toEqual(
      [...HOSTILE.map((c) => [c, 2] as const), ['schema', 1] as const].sort(),
    );
    for (const c of HOSTILE) expect(Object.hasOwn(counts, c), c).toBe(true);
    // What `dlq list --json` prints: every class with its number.
    const printed = JSON.stringify(counts);
    for (const c of HOSTILE) expect(printed).toContain(`"${c}":2`);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
  });

  it('replay: counts by outcome and class, and the summary names each hostile class with its number', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const decisions: ReplayDecision[] = [
      { deadLetter: deadLetter('__proto__', 1), outcome: 'replayed' },
      { deadLetter: deadLetter('__proto__', 2), outcome: 'replayed' },
      { deadLetter: deadLetter('constructor', 3), outcome: 'replayed' },
      { deadLetter: deadLetter('toString', 4), outcome: 'still-bad', why: 'still bad' },
      { deadLetter: deadLetter('valueOf', 5), outcome: 'source-gone', why: 'gone' },
    ];
    const counts = countOutcomes(decisions);
    expect(Object.entries(counts.replayed).sort()).toEqual([
      ['__proto__', 2],
      ['constructor', 1],
    ]);
    expect(Object.entries(counts['still-bad'])).toEqual([['toString', 1]]);
    expect(Object.entries(counts['source-gone'])).toEqual([['valueOf', 1]]);
    expect(Object.entries(counts['already-replayed'])).toEqual([]);

    const config = { kafka: { dlqTopic: 'dlq' } } as Config;
    expect(formatReplay({ dryRun: false, counts, decisions }, config).split('\n')).toEqual([
      'replayed 3 dead letters from dlq (__proto__ 2, constructor 1)',
      '  still poison with the current settings (skipped): 1 (toString 1)',
      '  original gone from the source topic (skipped): 1 (valueOf 1)',
      '    0:4 toString: still bad',
      '    0:5 valueOf: gone',
    ]);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
  });
});
