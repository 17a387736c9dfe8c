import { canonicalJson, digest } from '../canonical.js';
import { Examples, outside, own, type ReadBounds, splitPosition } from './check-support.js';
import { type DeadLetterClass, type Expectation, positionKey } from './expectation.js';

/** The triggers topic (read read_committed): every expected trigger exactly once, with its value. */
export class TriggersCheck {
  found = 0;
  ahead = 0;
  notJudged = 0;
  uncheckable = 0;
  /** Found triggers nobody expected, and how often. The expected ones are counted in place. */
  private readonly others = new Map<string, number>();
  readonly missing = new Examples<string>();
  readonly duplicate = new Examples<{ id: string; times: number }>();
  readonly unexpected = new Examples<{ id: string; why: string }>();
  readonly different = new Examples<{ id: string; why: string }>();

  constructor(
    private readonly exp: Expectation,
    private readonly since: boolean,
  ) {}

  get expected(): number {
    return this.exp.triggers.size;
  }

  record(key: Buffer | null, value: Buffer | null): void {
    this.found++;
    let v: unknown;
    try {
      v = JSON.parse(String(value));
    } catch {
      this.unexpected.add(() => ({ id: '(not JSON)', why: String(value).slice(0, 80) }));
      return;
    }
    const id = own(v, 'id');
    if (typeof id !== 'string') {
      this.unexpected.add(() => ({ id: '(no id)', why: String(value).slice(0, 80) }));
      return;
    }
    if (this.exp.uncertainTriggers.has(id)) {
      this.uncheckable++;
      return;
    }
    const want = this.exp.triggers.get(id);
    if (want !== undefined && want < 0) {
      // Seen before: expected digests are ≥ 0, -n means "found n times".
      this.exp.triggers.set(id, want - 1);
      return;
    }
    if (want !== undefined) this.exp.triggers.set(id, -1);
    else {
      const times = (this.others.get(id) ?? 0) + 1;
      this.others.set(id, times);
      if (times > 1) return;
    }
    if (want === undefined) {
      const source = own(v, 'sourceId');
      if (typeof source === 'string' && this.exp.pendingEvents.has(source)) this.ahead++;
      else if (this.since) this.notJudged++;
      else this.unexpected.add(() => ({ id, why: 'no unique event matches a rule with this id' }));
      return;
    }
    if (digest(canonicalJson(v)) !== want) this.different.add(() => ({ id, why: `value ${String(value)}` }));
    else if (key?.toString('utf8') !== own(v, 'clientId'))
      this.different.add(() => ({
        id,
        why: `key ${JSON.stringify(key?.toString('utf8') ?? null)} is not the clientId`,
      }));
  }

  finish(): void {
    for (const [id, v] of this.exp.triggers) {
      if (this.exp.uncertainTriggers.has(id)) continue;
      if (v >= 0) this.missing.add(() => id);
      else if (v < -1) this.duplicate.add(() => ({ id, times: -v }));
    }
  }
}

/** One source record's dead letters in the DLQ. */
export interface DeadLetterEntry {
  readonly cls: DeadLetterClass;
  /** "partition:offset" in the DLQ of each dead letter of this source record. */
  readonly at: string[];
}

/** The DLQ: every poison record once, with its class. */
export class DeadLettersCheck {
  readonly bySource = new Map<string, DeadLetterEntry>();
  found = 0;
  replayed = 0;
  ahead = 0;
  notJudged = 0;
  readonly missing = new Examples<{ source: string; cls: DeadLetterClass }>();
  readonly duplicate = new Examples<{ source: string; at: string[] }>();
  readonly differentClass = new Examples<{
    source: string;
    expected: DeadLetterClass;
    found: DeadLetterClass;
  }>();
  readonly unexpected = new Examples<{ at: string; source: string; cls: DeadLetterClass; why: string }>();

  constructor(private readonly dlqTopic: string) {}

  /** Called while reading the DLQ (before the input): indexes the dead letters by source. */
  deadLetter(partition: number, offset: string, headers: Readonly<Record<string, unknown>>): void {
    this.found++;
    const h = (k: string) => {
      const v = Object.hasOwn(headers, k) ? headers[k] : undefined;
      return v === undefined ? undefined : String(v);
    };
    const topic = h('x-source-topic');
    const p = h('x-source-partition');
    const o = h('x-source-offset');
    const cls = h('x-error-class') ?? '(none)';
    const at = `${partition}:${offset}`;
    if (topic === undefined || p === undefined || o === undefined || !/^\d+$/.test(p) || !/^\d+$/.test(o)) {
      this.unexpected.add(() => ({
        at,
        source: '(no x-source-* headers)',
        cls,
        why: 'not a dead letter of the contract',
      }));
      return;
    }
    const source = positionKey(topic, p, o);
    const entry = this.bySource.get(source);
    if (entry === undefined) this.bySource.set(source, { cls, at: [at] });
    else entry.at.push(at);
  }

  /** Positions dead-lettered as `rejected`: the input read must not expect them in the indices. */
  rejectedPositions(): Set<string> {
    const out = new Set<string>();
    for (const [source, e] of this.bySource) if (e.cls === 'rejected') out.add(source);
    return out;
  }

  compare(exp: Expectation, bounds: ReadBounds): void {
    for (const [source, cls] of exp.poison) {
      const e = this.bySource.get(source);
      if (e === undefined) {
        this.missing.add(() => ({ source, cls }));
        continue;
      }
      this.bySource.delete(source);
      if (e.cls !== cls) this.differentClass.add(() => ({ source, expected: cls, found: e.cls }));
      if (e.at.length > 1) this.duplicate.add(() => ({ source, at: e.at }));
    }
    for (const [source, e] of this.bySource) {
      const [topic, partition, offset] = splitPosition(source);
      const where = outside(bounds, topic, partition, offset);
      if (e.at.some((at) => exp.replayedDeadLetters.has(`${this.dlqTopic}/${at.replace(':', '/')}`))) {
        this.replayed += e.at.length;
      } else if (where === 'ahead') this.ahead += e.at.length;
      else if (where === 'before-since') this.notJudged += e.at.length;
      else {
        this.unexpected.add(() => ({
          at: e.at.join(','),
          source,
          cls: e.cls,
          why:
            where === undefined
              ? 'its source is not an input topic partition'
              : 'its source record is valid with the current settings, and was not replayed',
        }));
      }
    }
  }
}
