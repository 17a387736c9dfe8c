import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { securityReference, settingsReference } from '../../src/config/reference.js';

/**
 * docs/configuration.md, written from the configuration schema (`npm run docs:config`).
 * test/unit/docs/configuration-doc.test.ts fails when the file is not what this writes.
 */

export const CONFIGURATION_DOC = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url));

/** Text for a table cell: no pipe ends the cell and no angle bracket starts an HTML tag. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const code = (text: string) => (text === '' ? '(none)' : `\`${text}\``);

export function configurationDoc(): string {
  const groups = settingsReference();
  const slugger = new GithubSlugger();
  const lines = [
    '# Configuration',
    '',
    '<!-- Written by `npm run docs:config` from the configuration schema in src/config; edit the schema, not this file. -->',
    '',
    'Every setting is an environment variable, read and checked once at start. A bad value stops',
    'the start with one line naming the variable, the value and what is expected:',
    '',
    '```',
    'rxingest: invalid configuration: BATCH_MAX="lots" is invalid: expected a whole number from 1 to 100000',
    '```',
    '',
    '`rxingest worker --help` lists the same variables in the same groups, with their defaults.',
    'The tools (`rxingest reconcile`, `rxingest dlq`, `rxingest shed`) read the same environment.',
    '',
    ...[...groups.map((g) => g.title), securityReference.title].map(
      (title) => `- [${title}](#${slugger.slug(title)})`,
    ),
  ];
  for (const group of groups) {
    lines.push('', `## ${group.title}`, '', group.about, '');
    lines.push('| variable | default | accepts | meaning |', '|---|---|---|---|');
    for (const s of group.settings) {
      lines.push(`| \`${s.name}\` | ${code(s.default)} | ${cell(s.accepts)} | ${cell(s.meaning)} |`);
    }
  }
  lines.push('', `## ${securityReference.title}`, '', securityReference.about, '');
  lines.push('| variable | takes |', '|---|---|');
  for (const [name, takes] of Object.entries(securityReference.variables)) {
    lines.push(`| \`${name}\` | ${cell(takes)} |`);
  }
  lines.push(
    '',
    `Each secret, and the user names, may come from a file instead: ${securityReference.fileVariables.map((v) => `\`${v}\``).join(', ')}`,
    '(one trailing line break is dropped; setting both `X` and `X_FILE` is an error). A password for',
    'Redis goes in `REDIS_URL` (`rediss://:password@host:6380`), or in the file `REDIS_URL_FILE` names.',
    '',
  );
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CONFIGURATION_DOC, configurationDoc());
  console.log(`wrote ${CONFIGURATION_DOC}`);
}
