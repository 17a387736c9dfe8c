import type { Config } from '../../config/config.js';
import type { EventsCheck, ProfilesCheck } from './document-checks.js';
import type { Expectation } from './expectation.js';
import type { Snapshot } from './snapshot.js';
import type { DeadLettersCheck, TriggersCheck } from './topic-checks.js';

/** `rxingest reconcile --json`: the contract's keys (messages, duplicates, stale, deadLetters, events, profiles, triggers, examples) and more. */
export interface ReconcileReport {
  readonly ok: boolean;
  readonly differences: number;
  readonly group: string;
  readonly topics: string[];
  readonly since: string | null;
  readonly durationMs: number;
  readonly messages: number;
  readonly unique: number;
  readonly duplicates: number;
  readonly stale: number;
  readonly poison: number;
  readonly tombstones: { readonly ignored: number; readonly deletes: number };
  /** Offsets past the group's committed offsets (not expected yet), in all and per "topic/partition". */
  readonly beyondCommitted: {
    readonly total: number;
    readonly records: number;
    readonly byPartition: Record<string, number>;
  };
  /** Dead letters the input implies, by class. */
  readonly deadLetters: Record<string, number>;
  readonly dlq: {
    readonly expected: number;
    readonly found: number;
    readonly missing: number;
    readonly duplicate: number;
    readonly differentClass: number;
    readonly unexpected: number;
    readonly replayed: number;
    readonly ahead: number;
    readonly notJudged: number;
  };
  readonly events: {
    readonly expected: number;
    readonly found: number;
    readonly missing: number;
    readonly extra: number;
    readonly different: number;
    readonly ahead: number;
    readonly notJudged: number;
    readonly indices: string[];
  };
  readonly profiles: {
    readonly expected: number;
    readonly found: number;
    readonly different: number;
    readonly missing: number;
    readonly extra: number;
    readonly cannotBeChecked: number;
    readonly ahead: number;
    readonly notJudged: number;
  };
  readonly triggers: {
    readonly expected: number;
    readonly found: number;
    readonly missing: number;
    readonly duplicate: number;
    readonly unexpected: number;
    readonly different: number;
    readonly cannotBeChecked: number;
    readonly ahead: number;
    readonly notJudged: number;
  };
  readonly examples: Record<string, unknown[]>;
  readonly notes: string[];
}

export function buildReport(r: {
  config: Config;
  since: Date | undefined;
  durationMs: number;
  snapshot: Snapshot;
  exp: Expectation;
  dlq: DeadLettersCheck;
  events: EventsCheck;
  eventIndices: string[];
  profiles: ProfilesCheck;
  triggers: TriggersCheck;
}): ReconcileReport {
  const { exp, dlq, events, profiles, triggers, snapshot } = r;
  const byPartition: Record<string, number> = {};
  let beyond = 0;
  for (const [tp, n] of snapshot.beyond) {
    byPartition[tp] = Number(n);
    beyond += Number(n);
  }
  // Own properties built from the Map (Object.fromEntries), never assignments into `{}`: the
  // classes are the parser's, but a key must never reach a prototype whatever it is.
  const deadLetters: Record<string, number> = Object.fromEntries([...exp.deadLetters].sort());
  const examples: Record<string, unknown[]> = {};
  const put = (name: string, e: { items: unknown[] }) => {
    if (e.items.length > 0) examples[name] = e.items;
  };
  put('eventsMissing', events.missing);
  put('eventsExtra', events.extra);
  put('eventsDifferent', events.different);
  put('profilesMissing', profiles.missing);
  put('profilesExtra', profiles.extra);
  put('profilesDifferent', profiles.different);
  put('triggersMissing', triggers.missing);
  put('triggersDuplicate', triggers.duplicate);
  put('triggersUnexpected', triggers.unexpected);
  put('triggersDifferent', triggers.different);
  put('deadLettersMissing', dlq.missing);
  put('deadLettersDuplicate', dlq.duplicate);
  put('deadLettersDifferentClass', dlq.differentClass);
  put('deadLettersUnexpected', dlq.unexpected);
  const differences = [
    events.missing,
    events.extra,
    events.different,
    profiles.missing,
    profiles.extra,
    profiles.different,
    triggers.missing,
    triggers.duplicate,
    triggers.unexpected,
    triggers.different,
    dlq.missing,
    dlq.duplicate,
    dlq.differentClass,
    dlq.unexpected,
  ].reduce((a, e) => a + e.count, 0);
  const notes: string[] = [];
  for (const t of snapshot.missingOutputTopics) notes.push(`topic ${t} does not exist (read as empty)`);
  if (snapshot.partial) {
    notes.push(
      r.since
        ? `--since ${r.since.toISOString()}: records before it are not read; documents, triggers and dead letters that may come from them are not judged`
        : 'retention removed the start of some input partitions: what came from the removed records is not judged',
    );
  }
  if (beyond > 0)
    notes.push(
      `${beyond} offsets past the committed offsets are not expected yet (the worker is behind or running)`,
    );
  return {
    ok: differences === 0,
    differences,
    group: r.config.kafka.groupId,
    topics: r.config.kafka.topics,
    since: r.since?.toISOString() ?? null,
    durationMs: r.durationMs,
    messages: exp.counts.messages,
    unique: exp.counts.unique,
    duplicates: exp.counts.duplicates,
    stale: exp.counts.stale,
    poison: exp.counts.poison,
    tombstones: { ignored: exp.counts.tombstonesIgnored, deletes: exp.counts.deletes },
    beyondCommitted: { total: beyond, records: exp.counts.pending, byPartition },
    deadLetters,
    dlq: {
      expected: exp.poison.size,
      found: dlq.found,
      missing: dlq.missing.count,
      duplicate: dlq.duplicate.count,
      differentClass: dlq.differentClass.count,
      unexpected: dlq.unexpected.count,
      replayed: dlq.replayed,
      ahead: dlq.ahead,
      notJudged: dlq.notJudged,
    },
    events: {
      expected: events.expected,
      found: events.found,
      missing: events.missing.count,
      extra: events.extra.count,
      different: events.different.count,
      ahead: events.ahead,
      notJudged: events.notJudged,
      indices: r.eventIndices,
    },
    profiles: {
      expected: profiles.expected,
      found: profiles.found,
      different: profiles.different.count,
      missing: profiles.missing.count,
      extra: profiles.extra.count,
      cannotBeChecked: profiles.uncheckable,
      ahead: profiles.ahead,
      notJudged: profiles.notJudged,
    },
    triggers: {
      expected: triggers.expected,
      found: triggers.found,
      missing: triggers.missing.count,
      duplicate: triggers.duplicate.count,
      unexpected: triggers.unexpected.count,
      different: triggers.different.count,
      cannotBeChecked: triggers.uncheckable,
      ahead: triggers.ahead,
      notJudged: triggers.notJudged,
    },
    examples,
    notes,
  };
}

const n = (x: number) => x.toLocaleString('en-US');
const mark = (bad: number) => (bad === 0 ? 'ok' : 'DIFFERENT');
const extras = (parts: [string, number][]) =>
  parts
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `, ${k} ${n(v)}`)
    .join('');

const EXAMPLE_TITLES: Record<string, string> = {
  eventsMissing: 'events missing from the index',
  eventsExtra: 'event documents no record explains',
  eventsDifferent: 'event documents that differ',
  profilesMissing: 'profiles missing',
  profilesExtra: 'profiles no record explains',
  profilesDifferent: 'profile fields that differ (expected vs found)',
  triggersMissing: 'triggers missing',
  triggersDuplicate: 'triggers published more than once',
  triggersUnexpected: 'triggers no event explains',
  triggersDifferent: 'triggers whose value differs',
  deadLettersMissing: 'poison records without a dead letter',
  deadLettersDuplicate: 'poison records dead-lettered more than once',
  deadLettersDifferentClass: 'dead letters of another class',
  deadLettersUnexpected: 'dead letters no poison record explains',
};

/** The report a person reads in ten seconds. */
export function formatReport(r: ReconcileReport, counts: (name: string) => number): string {
  const lines: string[] = [];
  lines.push(
    `rxingest reconcile: group ${r.group}, topics ${r.topics.join(', ')}${r.since ? `, since ${r.since}` : ''} (${(r.durationMs / 1000).toFixed(1)} s)`,
  );
  lines.push(
    `  messages      ${n(r.messages)} up to the committed offsets: unique ${n(r.unique)}, duplicates dropped ${n(r.duplicates)}, stale updates ${n(r.stale)}, poison ${n(r.poison)}` +
      extras([
        ['tombstones ignored', r.tombstones.ignored],
        ['deletes', r.tombstones.deletes],
      ]),
  );
  lines.push(
    `  beyond        ${n(r.beyondCommitted.total)} offsets past the committed offsets (not expected yet)`,
  );
  const dlqBad = r.dlq.missing + r.dlq.duplicate + r.dlq.differentClass + r.dlq.unexpected;
  const byClass = Object.entries(r.deadLetters)
    .map(([c, v]) => `${c} ${n(v)}`)
    .join(', ');
  lines.push(
    `  dead letters  expected ${n(r.dlq.expected)}${byClass ? ` (${byClass})` : ''}, found ${n(r.dlq.found)}` +
      extras([
        ['missing', r.dlq.missing],
        ['duplicate', r.dlq.duplicate],
        ['other class', r.dlq.differentClass],
        ['unexpected', r.dlq.unexpected],
        ['replayed', r.dlq.replayed],
        ['ahead', r.dlq.ahead],
        ['not judged', r.dlq.notJudged],
      ]) +
      `  ${mark(dlqBad)}`,
  );
  const evBad = r.events.missing + r.events.extra + r.events.different;
  lines.push(
    `  events        expected ${n(r.events.expected)}, found ${n(r.events.found)}, missing ${n(r.events.missing)}, extra ${n(r.events.extra)}` +
      extras([
        ['different', r.events.different],
        ['ahead', r.events.ahead],
        ['not judged', r.events.notJudged],
      ]) +
      `  ${mark(evBad)}`,
  );
  const prBad = r.profiles.missing + r.profiles.extra + r.profiles.different;
  lines.push(
    `  profiles      expected ${n(r.profiles.expected)}, found ${n(r.profiles.found)}, different ${n(r.profiles.different)}` +
      extras([
        ['missing', r.profiles.missing],
        ['extra', r.profiles.extra],
        ['cannot be checked (order-dependent)', r.profiles.cannotBeChecked],
        ['ahead', r.profiles.ahead],
        ['not judged', r.profiles.notJudged],
      ]) +
      `  ${mark(prBad)}`,
  );
  const trBad = r.triggers.missing + r.triggers.duplicate + r.triggers.unexpected + r.triggers.different;
  lines.push(
    `  triggers      expected ${n(r.triggers.expected)}, found ${n(r.triggers.found)}, missing ${n(r.triggers.missing)}, duplicate ${n(r.triggers.duplicate)}, unexpected ${n(r.triggers.unexpected)}` +
      extras([
        ['different', r.triggers.different],
        ['cannot be checked', r.triggers.cannotBeChecked],
        ['ahead', r.triggers.ahead],
        ['not judged', r.triggers.notJudged],
      ]) +
      `  ${mark(trBad)}`,
  );
  for (const note of r.notes) lines.push(`  note: ${note}`);
  for (const [name, items] of Object.entries(r.examples)) {
    const total = counts(name);
    lines.push(
      `  ${EXAMPLE_TITLES[name] ?? name} (${n(total)}${total > items.length ? `, first ${items.length}` : ''}):`,
    );
    for (const item of items) lines.push(`    ${typeof item === 'string' ? item : JSON.stringify(item)}`);
  }
  lines.push(
    r.ok
      ? 'result: nothing missing or different (exit 0)'
      : `result: ${n(r.differences)} difference${r.differences === 1 ? '' : 's'} (exit 1)`,
  );
  return lines.join('\n');
}

/** How many differences of an examples kind there were in all (the examples hold at most 10). */
export function exampleCounts(r: ReconcileReport): (name: string) => number {
  const map: Record<string, number> = {
    eventsMissing: r.events.missing,
    eventsExtra: r.events.extra,
    eventsDifferent: r.events.different,
    profilesMissing: r.profiles.missing,
    profilesExtra: r.profiles.extra,
    profilesDifferent: r.profiles.different,
    triggersMissing: r.triggers.missing,
    triggersDuplicate: r.triggers.duplicate,
    triggersUnexpected: r.triggers.unexpected,
    triggersDifferent: r.triggers.different,
    deadLettersMissing: r.dlq.missing,
    deadLettersDuplicate: r.dlq.duplicate,
    deadLettersDifferentClass: r.dlq.differentClass,
    deadLettersUnexpected: r.dlq.unexpected,
  };
  return (name) => map[name] ?? 0;
}
