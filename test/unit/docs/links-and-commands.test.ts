import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { anchorsOf, commandProblems, documentFiles, linkProblems } from '../../../scripts/docs/doc-check.js';
import { rxingestProgram } from '../../../src/cli/program.js';
import { WorkerMetrics } from '../../../src/metrics/worker-metrics.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const scripts: Record<string, string> = JSON.parse(readFileSync(`${root}package.json`, 'utf8')).scripts;
const read = (file: string) => readFileSync(`${root}${file}`, 'utf8');

describe('the documents', () => {
  const files = documentFiles(root);

  it('cover the README, the architecture, the changelog and every page of docs/', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md']));
    expect(files).toEqual(
      expect.arrayContaining(['docs/configuration.md', 'docs/guarantees.md', 'docs/operations.md']),
    );
  });

  it.each(files)('%s: every relative link and anchor resolves', (file) => {
    expect(linkProblems(root, file, read(file))).toEqual([]);
  });

  it.each(files)('%s: every npm script and rxingest command shown exists', (file) => {
    expect(commandProblems(file, read(file), scripts, rxingestProgram())).toEqual([]);
  });

  it.each(files)('%s: every metric named is one the worker registers', (file) => {
    const registered = new Set(new WorkerMetrics().registry.getMetricsAsArray().map((m) => m.name));
    const named = [...read(file).matchAll(/\brxingest_[a-z0-9_]*[a-z0-9]/g)].map(([name]) =>
      name.replace(/_(bucket|sum|count)$/, ''),
    );
    expect(named.filter((name) => !registered.has(name))).toEqual([]);
  });

  it('the README stays short: at most 250 lines and under 15 KB', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length - 1).toBeLessThanOrEqual(250);
    expect(Buffer.byteLength(readme)).toBeLessThan(15_000);
  });
});

describe('the checks themselves', () => {
  it('slug headings as GitHub does: markup dropped, punctuation out, repeats numbered', () => {
    const anchors = anchorsOf(
      '# Tier 1: adaptive concurrency\n\n## `rxingest dlq list`\n\n## Notes\n\n## Notes\n',
    );
    expect([...anchors]).toEqual(['tier-1-adaptive-concurrency', 'rxingest-dlq-list', 'notes', 'notes-1']);
  });

  it('find a missing file, a missing anchor and a missing anchor of the same page', () => {
    const md =
      '# Here\n\n[a](docs/nowhere.md) [b](docs/operations.md#no-such-heading) [c](#not-here) [d](#here)\n';
    const problems = linkProblems(root, 'README.md', md).map((p) => p.problem);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toContain('docs/nowhere.md does not exist');
    expect(problems[1]).toContain('no heading #no-such-heading');
    expect(problems[2]).toContain('no heading #not-here');
  });

  it('find links inside tables and lists, and leave external ones alone', () => {
    const md =
      '| a |\n|---|\n| [x](missing-in-table.md) |\n\n- [y](missing-in-list.md)\n- [z](https://example.com/x.md)\n';
    expect(linkProblems(root, 'README.md', md)).toHaveLength(2);
  });

  it('find a script package.json lacks, a subcommand, a sub-subcommand and an option the program lacks', () => {
    const md = [
      '```sh',
      'npm run no-such-script',
      'npm run stack:up',
      'rxingest frobnicate --now',
      'rxingest dlq purge',
      'rxingest dlq list --class schema --colour',
      'node dist/cli/main.js produce --rate 10',
      '```',
      '',
      'And `rxingest shed reviews --reason "x"`, `npx rxingest reconcile --json`.',
    ].join('\n');
    const problems = commandProblems('x.md', md, scripts, rxingestProgram()).map((p) => p.problem);
    expect(problems).toEqual([
      'npm run no-such-script: no such script in package.json',
      expect.stringContaining('no subcommand "frobnicate" of rxingest'),
      expect.stringContaining('no subcommand "purge" of dlq'),
      expect.stringContaining('list has no option --colour'),
    ]);
  });

  it('read commands in prose code and output lines, not words that only contain the name', () => {
    const md =
      '`rxingest_records_in_total`, `rxingest/producer`, `docker build -t rxingest .`, `service: "rxingest"`.\n';
    expect(commandProblems('x.md', md, scripts, rxingestProgram())).toEqual([]);
  });
});
