import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { esClient, stackEnv, uniqueName } from '../../../harness/stack.js';
import { spawnWorker } from '../../../harness/worker/process.js';
import { loadConfig } from '../../../src/config/config.js';
import {
  ensureIndices,
  ensureTemplate,
  eventsMapping,
  SetupError,
} from '../../../src/worker/elasticsearch-setup.js';

/**
 * Index set-up against the real Elasticsearch: the events template of a date pattern is
 * installed and updated when its mapping changes; an ILM policy is attached only where the
 * cluster has ILM (the local server has not: a warning, and the template without it); a
 * profiles index whose mapping cannot hold the merge stops the start with one line.
 */
describe('index set-up', () => {
  const es = esClient();
  const created: string[] = [];
  const templates: string[] = [];
  afterAll(async () => {
    for (const t of templates) await es.indices.deleteIndexTemplate({ name: t }).catch(() => undefined);
    if (created.length > 0) await es.indices.delete({ index: created, ignore_unavailable: true });
    await es.close();
  });

  const capture = () => {
    const lines: { level: number; msg: string }[] = [];
    return { lines, log: pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) }) };
  };

  it('installs the template of a date-pattern EVENTS_INDEX, updates it when its mapping changed, and leaves it alone when not', async () => {
    const base = uniqueName('setup-events');
    const pattern = `${base}-{yyyy.MM.dd}`;
    const name = `rxingest-${base}-x`;
    templates.push(name);
    const { log, lines } = capture();
    await ensureTemplate(es, pattern, log);
    const got = await es.indices.getIndexTemplate({ name });
    expect(got.index_templates[0]?.index_template.index_patterns).toEqual([`${base}-*`]);
    expect(got.index_templates[0]?.index_template.template?.mappings).toEqual(eventsMapping);
    expect(lines.map((l) => l.msg)).toEqual(['installed index template']);

    await ensureTemplate(es, pattern, log);
    expect(lines).toHaveLength(1);

    // Someone (an older version) left another mapping under the name: it is put right.
    await es.indices.putIndexTemplate({
      name,
      index_patterns: [`${base}-*`],
      template: { mappings: { properties: {} } },
    });
    await ensureTemplate(es, pattern, log);
    expect(lines.at(-1)?.msg).toBe('updated index template');
    const fixed = await es.indices.getIndexTemplate({ name });
    expect(fixed.index_templates[0]?.index_template.template?.mappings).toEqual(eventsMapping);

    // A day's index made from it carries the mapping.
    const day = `${base}-2026.12.01`;
    created.push(day);
    await es.indices.create({ index: day });
    const mapping = await es.indices.getMapping({ index: day });
    expect(mapping[day]?.mappings.properties?.origin).toBeDefined();
  });

  it('without ILM on the cluster, EVENTS_ILM_POLICY gives one warning and the template goes without a lifecycle', async () => {
    const base = uniqueName('setup-ilm');
    templates.push(`rxingest-${base}-x`);
    const { log, lines } = capture();
    await ensureTemplate(es, `${base}-{yyyy.MM}`, log, 'events-30d');
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'EVENTS_ILM_POLICY is set but this cluster has no index lifecycle management: the template goes without it',
    ]);
    const got = await es.indices.getIndexTemplate({ name: `rxingest-${base}-x` });
    expect(JSON.stringify(got.index_templates[0]?.index_template.template?.settings ?? {})).not.toContain(
      'lifecycle',
    );
  });

  it('refuses an existing profiles index whose mapping cannot hold merged profiles, in one line', async () => {
    const profiles = uniqueName('setup-bad-profiles');
    created.push(profiles);
    await es.indices.create({
      index: profiles,
      mappings: {
        dynamic: 'strict',
        properties: { clientId: { type: 'keyword' }, data: { type: 'keyword' } },
      },
    });
    const config = loadConfig({
      ES_NODE: stackEnv.esNode,
      PROFILES_INDEX: profiles,
      EVENTS_INDEX: uniqueName('setup-ev'),
    });
    created.push(config.elasticsearch.eventsIndex);
    const err = await ensureIndices(es, config.elasticsearch, pino({ level: 'silent' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SetupError);
    expect((err as Error).message).toBe(
      `PROFILES_INDEX=${profiles}: the existing index cannot hold merged profiles: "data" is mapped as keyword, not an object; ` +
        'the index is "dynamic": "strict" and has no "version" field; the index is "dynamic": "strict" and has no "fieldVersions" field ' +
        '(use another index, or recreate it and let rxingest create it)',
    );
  });

  it('the worker stops its start with that line', async () => {
    const profiles = uniqueName('setup-bad-profiles');
    created.push(profiles);
    await es.indices.create({
      index: profiles,
      mappings: { properties: { fieldVersions: { type: 'object' } } },
    });
    const name = uniqueName('setup-worker');
    const w = spawnWorker(
      {
        PROFILES_INDEX: profiles,
        EVENTS_INDEX: `${name}-events`,
        INGEST_TOPICS: `${name}.in`,
        ES_NODE: stackEnv.esNode,
        KAFKA_BROKERS: stackEnv.kafkaBrokers,
        REDIS_URL: stackEnv.redisUrl,
      },
      name,
    );
    created.push(`${name}-events`);
    expect(await w.exited).toBe(1);
    const { readFileSync } = await import('node:fs');
    const out = readFileSync(w.logFile, 'utf8');
    expect(out).toContain(
      `rxingest: could not start: PROFILES_INDEX=${profiles}: the existing index cannot hold merged profiles: "fieldVersions" must be an object with "enabled": false`,
    );
  });
});
