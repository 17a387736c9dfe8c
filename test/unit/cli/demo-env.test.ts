import { describe, expect, it } from 'vitest';
import { demoEnv } from '../../../src/cli/demo-command.js';

describe('the demo finds the engine the stack started', () => {
  it('without ES_NODE, the engine on ES_PORT (another engine started beside the default one)', () => {
    expect(demoEnv({ ES_PORT: '9220' }).ES_NODE).toBe('http://127.0.0.1:9220');
  });

  it('ES_NODE, when set, wins; with neither, the worker default stays', () => {
    expect(demoEnv({ ES_PORT: '9220', ES_NODE: 'https://search:9200' }).ES_NODE).toBe('https://search:9200');
    expect(demoEnv({}).ES_NODE).toBeUndefined();
  });
});
