import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ensureTemplate, eventsMapping } from '../../../src/worker/elasticsearch-setup.js';

/** Only what ensureTemplate calls; the real server's answers are covered in test/integration/elasticsearch/elasticsearch-setup. */
function fakeClient({ ilm }: { ilm: boolean }) {
  const puts: unknown[] = [];
  return {
    puts,
    client: {
      ilm: {
        getStatus: async () =>
          ilm ? { operation_mode: 'RUNNING' } : Promise.reject(new Error('no handler')),
      },
      indices: {
        getIndexTemplate: async () => Promise.reject(new Error('missing')),
        putIndexTemplate: async (body: unknown) => {
          puts.push(body);
          return { acknowledged: true };
        },
      },
    },
  };
}

describe('ensureTemplate', () => {
  it('attaches EVENTS_ILM_POLICY through the template where the cluster has ILM', async () => {
    const f = fakeClient({ ilm: true });
    await ensureTemplate(f.client as never, 'events-{yyyy.MM.dd}', pino({ level: 'silent' }), 'events-30d');
    expect(f.puts).toEqual([
      {
        name: 'rxingest-events-x',
        index_patterns: ['events-*'],
        template: {
          settings: {
            'index.mapping.total_fields.ignore_dynamic_beyond_limit': true,
            'index.lifecycle.name': 'events-30d',
          },
          mappings: eventsMapping,
        },
        _meta: { managed_by: 'rxingest' },
      },
    ]);
  });

  it('goes without a lifecycle where there is no ILM', async () => {
    const f = fakeClient({ ilm: false });
    await ensureTemplate(f.client as never, 'events-{yyyy.MM}', pino({ level: 'silent' }), 'events-30d');
    expect(JSON.stringify(f.puts)).not.toContain('lifecycle');
  });
});
