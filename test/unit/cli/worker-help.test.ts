import { describe, expect, it } from 'vitest';
import { workerCommand } from '../../../src/cli/worker-command.js';
import { configVariables } from '../../../src/config/config.js';
import { firstSentence, settingsReference } from '../../../src/config/reference.js';

function helpText(): string {
  let out = '';
  const cmd = workerCommand().configureOutput({ writeOut: (s) => (out += s) });
  cmd.outputHelp();
  return out;
}

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('rxingest worker --help', () => {
  it('lists every setting with its default and what it means, the name and the default apart even for the longest name', () => {
    const help = helpText();
    for (const group of settingsReference()) {
      for (const s of group.settings) {
        expect(help, s.name).toMatch(
          new RegExp(`^  ${s.name} +\\[${literal(s.default)}\\] +${literal(firstSentence(s.meaning))}$`, 'm'),
        );
      }
    }
    expect(settingsReference().flatMap((g) => g.settings.map((s) => s.name))).toEqual(
      Object.keys(configVariables),
    );
  });

  it('shows the groups of docs/configuration.md, in its order', () => {
    const help = helpText();
    const at = settingsReference().map((g) => help.indexOf(`\n${g.title}: ${g.about}\n`));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(help).toContain('docs/configuration.md');
  });
});
