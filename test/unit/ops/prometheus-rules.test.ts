import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ensurePrometheus } from '../../../harness/debian-package.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const dir = join(root, 'ops', 'prometheus');

/** promtool's exit code and everything it printed; it prints its verdicts on both streams. */
async function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: root, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
const passes = async (...args: string[]) => {
  const r = await promtool(...args);
  expect(r.code, `promtool ${args.join(' ')}:\n${r.output}`).toBe(0);
  return r.output;
};

interface AlertRule {
  alert: string;
  expr: string;
}
interface RuleTests {
  rule_files: string[];
  tests: {
    name: string;
    alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[];
  }[];
}
const alerts = (
  parse(readFileSync(join(dir, 'alerts.yml'), 'utf8')) as { groups: { rules: AlertRule[] }[] }
).groups
  .flatMap((g) => g.rules)
  .map((r) => r.alert);
const ruleTests = parse(readFileSync(join(dir, 'alerts.test.yml'), 'utf8')) as RuleTests;

beforeAll(ensurePrometheus, 10 * 60_000);

describe('ops/prometheus, as promtool reads it', () => {
  it('alerts.yml passes `promtool check rules`, every rule in it found', async () => {
    const out = await passes('check', 'rules', 'ops/prometheus/alerts.yml');
    expect(out).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('prometheus.yml passes `promtool check config`, alerts.yml among its rule files', async () => {
    const out = await passes('check', 'config', 'ops/prometheus/prometheus.yml');
    expect(out).toContain('SUCCESS: 1 rule files found');
    expect(out).toContain('Checking ops/prometheus/alerts.yml');
  });

  it('alerts.test.yml passes `promtool test rules`', async () => {
    const out = await passes('test', 'rules', 'ops/prometheus/alerts.test.yml');
    expect(out).toContain('SUCCESS');
  });

  it('has, for every alert, a case that fires it and one that must not, and no case for an alert that is gone', () => {
    expect(ruleTests.rule_files).toEqual(['alerts.yml']);
    const cases = ruleTests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${alert}: a case where it fires`,
      ).toBe(true);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${alert}: a case where it must not fire`,
      ).toBe(true);
    }
    for (const c of cases) expect(alerts, `a case for ${c.alertname}`).toContain(c.alertname);
  });
});

describe('promtool test rules, on rules that are wrong', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'rxingest-rules-'));
    cpSync(join(dir, 'alerts.test.yml'), join(scratch, 'alerts.test.yml'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('fails when an alert no longer fires on its firing series (a threshold raised tenfold)', async () => {
    const raised = readFileSync(join(dir, 'alerts.yml'), 'utf8').replace(
      'lag_p99_seconds) > 1',
      'lag_p99_seconds) > 10',
    );
    expect(raised).toContain('lag_p99_seconds) > 10');
    writeFileSync(join(scratch, 'alerts.yml'), raised);
    const r = await promtool('test', 'rules', join(scratch, 'alerts.test.yml'));
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('alertname: RxingestEventLoopLag');
  });

  it('fails when an alert fires on its quiet series (a filter dropped)', async () => {
    const doc = parse(readFileSync(join(dir, 'alerts.yml'), 'utf8')) as { groups: { rules: AlertRule[] }[] };
    const rule = doc.groups[0]!.rules.find((r) => r.alert === 'RxingestElasticsearchRetrying')!;
    rule.expr = rule.expr.replace('{target="elasticsearch"}', '');
    writeFileSync(join(scratch, 'alerts.yml'), stringify(doc));
    const r = await promtool('test', 'rules', join(scratch, 'alerts.test.yml'));
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('alertname: RxingestElasticsearchRetrying');
  });
});
