import { describe, expect, it } from 'vitest';
import { workerCommand } from '../../../src/cli/worker-command.js';
import { configVariables } from '../../../src/config/config.js';

function helpText(): string {
  let out = '';
  const cmd = workerCommand().configureOutput({ writeOut: (s) => (out += s) });
  cmd.outputHelp();
  return out;
}

describe('rxingest worker --help', () => {
  it('lists every setting with its default, the name and the default apart even for the longest name', () => {
    const help = helpText();
    for (const [name, def] of Object.entries(configVariables)) {
      expect(help, name).toMatch(
        new RegExp(`^  ${name} +\\[${def.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\]$`, 'm'),
      );
    }
  });
});
