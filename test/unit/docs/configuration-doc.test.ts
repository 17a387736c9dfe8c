import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, configurationDoc } from '../../../scripts/docs/config-doc.js';
import { configVariables } from '../../../src/config/config.js';
import { settingsReference } from '../../../src/config/reference.js';
import { securityVariables } from '../../../src/config/security.js';

describe('docs/configuration.md', () => {
  it('is byte for byte what `npm run docs:config` writes from the schema', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8')).toBe(configurationDoc());
  });

  it('has a row for every variable the worker reads and every secured-connection variable', () => {
    const doc = configurationDoc();
    for (const name of [...Object.keys(configVariables), ...Object.keys(securityVariables)]) {
      expect(doc, name).toMatch(new RegExp(`^\\| \`${name}\` \\|`, 'm'));
    }
  });

  it('gives every setting a meaning and what it accepts, from the schema', () => {
    for (const group of settingsReference()) {
      for (const s of group.settings) {
        expect(s.meaning.length, s.name).toBeGreaterThan(10);
        expect(s.accepts.length, s.name).toBeGreaterThan(2);
      }
    }
    const batchMax = settingsReference()
      .flatMap((g) => g.settings)
      .find((s) => s.name === 'BATCH_MAX');
    expect(batchMax?.accepts).toBe('a whole number from 1 to 100000');
  });

  it('says "any text" only of the settings that take any text', () => {
    const free = settingsReference()
      .flatMap((g) => g.settings)
      .filter((s) => s.accepts === 'any text')
      .map((s) => s.name);
    // The same two the configuration tests find no bad value for.
    expect(free.sort()).toEqual(['REDIS_KEY_PREFIX', 'TRIGGER_RULES']);
  });
});
