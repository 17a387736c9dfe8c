import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { indexDialect } from '../../../src/worker/index-dialect.js';
import { ismPatternCovers, lifecycleSettings } from '../../../src/worker/lifecycle-policy.js';

const es8 = { product: 'elasticsearch', major: 8, version: '8.19.8' } as const;
const os2 = { product: 'opensearch', major: 2, version: '2.19.4' } as const;

describe('indexDialect', () => {
  it('maps data as runtime fields on Elasticsearch and as a flat_object on OpenSearch', () => {
    expect(indexDialect(es8).eventsMapping).toMatchObject({
      properties: { data: { type: 'object', dynamic: 'runtime' } },
    });
    expect(indexDialect(os2).profilesMapping).toMatchObject({
      properties: { data: { type: 'flat_object' } },
    });
    expect(indexDialect(os2).eventsMapping).toMatchObject({ properties: { data: { type: 'flat_object' } } });
  });

  it('sets ignore_dynamic_beyond_limit only where the engine knows it (Elasticsearch 8.13+)', () => {
    const key = 'index.mapping.total_fields.ignore_dynamic_beyond_limit';
    expect(indexDialect(undefined).settings).toHaveProperty(key, true);
    expect(indexDialect(es8).settings).toHaveProperty(key, true);
    expect(indexDialect({ product: 'elasticsearch', major: 8, version: '8' }).settings).toHaveProperty(
      key,
      true,
    );
    expect(indexDialect({ product: 'elasticsearch', major: 8, version: '8.11.4' }).settings).toEqual({});
    expect(indexDialect(os2).settings).toEqual({});
  });
});

describe('lifecycle policies', () => {
  const log = pino({ level: 'silent' });
  it('attaches an ILM policy through the template on Elasticsearch', async () => {
    const client = { ilm: { getStatus: vi.fn(async () => ({ operation_mode: 'RUNNING' })) } };
    expect(await lifecycleSettings(client as never, es8, 'p30', 'events-*', log)).toEqual({
      'index.lifecycle.name': 'p30',
    });
  });

  it('on OpenSearch puts nothing in the template and reads the ISM policy (its ism_template attaches it)', async () => {
    const request = vi.fn(async () => ({ policy: { ism_template: [{ index_patterns: ['events-*'] }] } }));
    const warn = vi.fn();
    const settings = await lifecycleSettings({ transport: { request } } as never, os2, 'p30', 'events-*', {
      ...log,
      warn,
      info: vi.fn(),
    } as never);
    expect(settings).toEqual({});
    expect(request).toHaveBeenCalledWith({ method: 'GET', path: '/_plugins/_ism/policies/p30' });
    expect(warn).not.toHaveBeenCalled();
  });

  it('warns when the ISM policy does not cover the events indices', async () => {
    const request = vi.fn(async () => ({ policy: { ism_template: [{ index_patterns: ['logs-*'] }] } }));
    const warn = vi.fn();
    await lifecycleSettings({ transport: { request } } as never, os2, 'p30', 'events-*', {
      ...log,
      warn,
      info: vi.fn(),
    } as never);
    expect(warn).toHaveBeenCalledWith(
      expect.objectContaining({ policy: 'p30', pattern: 'events-*' }),
      expect.stringContaining('add "events-*" to its index_patterns'),
    );
  });

  it.each([
    ['events-*', 'events-*', true],
    ['ev*', 'events-*', true],
    ['*', 'events-*', true],
    ['logs-*', 'events-*', false],
    ['events-2026*', 'events-*', false],
  ])('ISM pattern %s covers %s: %s', (pattern, wildcard, covers) => {
    expect(ismPatternCovers(pattern, wildcard)).toBe(covers);
  });
});
