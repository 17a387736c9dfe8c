import { type Client, errors } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import type { SearchEngine } from '../clients/search-engine.js';
import type { Config } from '../config/config.js';
import { redactUrl } from '../config/redact-url.js';
import { eventsIndexWildcard, isDatePattern } from '../model/event-index.js';
import { eventsMappingFor, indexDialect, profilesMappingFor } from './index-dialect.js';
import { lifecycleSettings } from './lifecycle-policy.js';

/** Elasticsearch's mappings (the ones of the engines' dialects are in ./index-dialect.ts). */
export const profilesMapping = profilesMappingFor();
export const eventsMapping = eventsMappingFor();

/** A start-up problem with one line for the user. */
export class SetupError extends Error {
  override name = 'SetupError';
}

/**
 * Makes the indices ready: creates the profiles index and the events index (or, for a
 * date pattern, installs the index template every day's index is created from) when
 * missing, and checks that an existing profiles index can hold what the merge writes. The
 * mappings, settings and lifecycle policy are `engine`'s dialect (Elasticsearch 9's without one).
 */
export async function ensureIndices(
  es: Client,
  cfg: Config['elasticsearch'],
  log: Logger,
  engine?: SearchEngine,
): Promise<void> {
  const dialect = indexDialect(engine);
  try {
    await ensureIndex(es, cfg.profilesIndex, dialect.profilesMapping, dialect.settings, log);
    await checkProfilesMapping(es, cfg.profilesIndex);
    if (isDatePattern(cfg.eventsIndex))
      await ensureTemplate(es, cfg.eventsIndex, log, cfg.eventsIlmPolicy, engine);
    else if (cfg.eventsIlmPolicy !== undefined) {
      log.warn(
        { policy: cfg.eventsIlmPolicy },
        'EVENTS_ILM_POLICY applies to a date-pattern EVENTS_INDEX only; ignored',
      );
    } else await ensureIndex(es, cfg.eventsIndex, dialect.eventsMapping, dialect.settings, log);
  } catch (err) {
    if (err instanceof SetupError) throw err;
    if (err instanceof errors.ConnectionError || err instanceof errors.TimeoutError) {
      throw new SetupError(`Elasticsearch at ${redactUrl(cfg.node)} is unreachable: ${err.message}`);
    }
    throw err;
  }
}

async function ensureIndex(
  es: Client,
  index: string,
  mappings: object,
  settings: object,
  log: Logger,
): Promise<void> {
  if (await es.indices.exists({ index })) return;
  try {
    await es.indices.create({
      index,
      settings: structuredClone(settings) as never,
      mappings: structuredClone(mappings) as never,
    });
    log.info({ index }, 'created index');
  } catch (err) {
    if (err instanceof errors.ResponseError && err.body?.error?.type === 'resource_already_exists_exception')
      return;
    throw err;
  }
}

/** The events template: every index of the date pattern gets the events mapping. */
export async function ensureTemplate(
  es: Client,
  pattern: string,
  log: Logger,
  ilmPolicy?: string,
  engine?: SearchEngine,
): Promise<void> {
  const wildcard = eventsIndexWildcard(pattern);
  const name = `rxingest-${wildcard.replace(/\*/g, 'x')}`;
  const dialect = indexDialect(engine);
  const policySettings =
    ilmPolicy === undefined ? {} : await lifecycleSettings(es, engine, ilmPolicy, wildcard, log);
  const lifecycle = policySettings['index.lifecycle.name'];
  const body = {
    index_patterns: [wildcard],
    template: {
      settings: { ...dialect.settings, ...policySettings },
      mappings: structuredClone(dialect.eventsMapping) as never,
    },
    _meta: { managed_by: 'rxingest' },
  };
  const existing = await es.indices.getIndexTemplate({ name }).catch(() => undefined);
  const current = existing?.index_templates?.[0]?.index_template;
  const currentPolicy = (
    current?.template?.settings as { index?: { lifecycle?: { name?: string } } } | undefined
  )?.index?.lifecycle?.name;
  if (current && sameJson(current.template?.mappings, dialect.eventsMapping) && currentPolicy === lifecycle) {
    return;
  }
  await es.indices.putIndexTemplate({ name, ...body } as never);
  log.info(
    { template: name, pattern: body.index_patterns[0] },
    current ? 'updated index template' : 'installed index template',
  );
}

/** Equal as JSON values, whatever the order of object keys (Elasticsearch answers them sorted its own way). */
function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** A profiles index made by someone else must not make the merge fail or corrupt documents. */
async function checkProfilesMapping(es: Client, index: string): Promise<void> {
  const res = await es.indices.getMapping({ index });
  const mapping = Object.values(res)[0]?.mappings as
    | {
        dynamic?: string | boolean;
        properties?: Record<string, { type?: string; enabled?: boolean; dynamic?: string | boolean }>;
      }
    | undefined;
  const props = mapping?.properties ?? {};
  const problems: string[] = [];
  const fv = props.fieldVersions;
  if (fv !== undefined && fv.enabled !== false)
    problems.push('"fieldVersions" must be an object with "enabled": false');
  const data = props.data;
  if (
    data !== undefined &&
    data.type !== undefined &&
    !['object', 'flattened', 'flat_object'].includes(data.type)
  ) {
    problems.push(`"data" is mapped as ${data.type}, not an object`);
  }
  if (data?.dynamic === 'strict' || data?.dynamic === false || data?.dynamic === 'false') {
    if (data.dynamic === 'strict')
      problems.push('"data" is "dynamic": "strict", so new profile fields would be refused');
  }
  const strict = String(mapping?.dynamic) === 'strict';
  for (const f of ['clientId', 'version', 'data', 'fieldVersions']) {
    if (strict && props[f] === undefined)
      problems.push(`the index is "dynamic": "strict" and has no "${f}" field`);
  }
  const version = props.version?.type;
  if (version !== undefined && !['long', 'integer', 'unsigned_long', 'double', 'float'].includes(version)) {
    problems.push(`"version" is mapped as ${version}, not a number`);
  }
  if (problems.length > 0) {
    throw new SetupError(
      `PROFILES_INDEX=${index}: the existing index cannot hold merged profiles: ${problems.join('; ')} (use another index, or recreate it and let rxingest create it)`,
    );
  }
}
