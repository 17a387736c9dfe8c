import { type Client, errors } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { redactUrl } from '../config/redact-url.js';
import { eventsIndexWildcard, isDatePattern } from '../model/event-index.js';

/**
 * `data` is mapped `dynamic: runtime`: every field is searchable, and a field that is a
 * number for one client and a string for another never fails indexing (an indexed dynamic
 * mapping would reject the second as a 400). `fieldVersions` is the merge's bookkeeping:
 * stored, never indexed.
 */
export const profilesMapping = {
  properties: {
    clientId: { type: 'keyword' },
    version: { type: 'long' },
    data: { type: 'object', dynamic: 'runtime' },
    fieldVersions: { type: 'object', enabled: false },
  },
} as const;

export const eventsMapping = {
  properties: {
    clientId: { type: 'keyword' },
    name: { type: 'keyword' },
    ts: { type: 'date', format: 'strict_date_optional_time||epoch_millis' },
    data: { type: 'object', dynamic: 'runtime' },
    origin: {
      properties: { topic: { type: 'keyword' }, partition: { type: 'integer' }, offset: { type: 'long' } },
    },
  },
} as const;

/** Past the field limit, new field names stay in _source unmapped instead of failing every later document. */
const settings = { 'index.mapping.total_fields.ignore_dynamic_beyond_limit': true };

/** A start-up problem with one line for the user. */
export class SetupError extends Error {
  override name = 'SetupError';
}

/**
 * Makes the indices ready: creates the profiles index and the events index (or, for a
 * date pattern, installs the index template every day's index is created from) when
 * missing, and checks that an existing profiles index can hold what the merge writes.
 */
export async function ensureIndices(es: Client, cfg: Config['elasticsearch'], log: Logger): Promise<void> {
  try {
    await ensureIndex(es, cfg.profilesIndex, profilesMapping, log);
    await checkProfilesMapping(es, cfg.profilesIndex);
    if (isDatePattern(cfg.eventsIndex)) await ensureTemplate(es, cfg.eventsIndex, log, cfg.eventsIlmPolicy);
    else if (cfg.eventsIlmPolicy !== undefined) {
      log.warn(
        { policy: cfg.eventsIlmPolicy },
        'EVENTS_ILM_POLICY applies to a date-pattern EVENTS_INDEX only; ignored',
      );
    } else await ensureIndex(es, cfg.eventsIndex, eventsMapping, log);
  } catch (err) {
    if (err instanceof SetupError) throw err;
    if (err instanceof errors.ConnectionError || err instanceof errors.TimeoutError) {
      throw new SetupError(`Elasticsearch at ${redactUrl(cfg.node)} is unreachable: ${err.message}`);
    }
    throw err;
  }
}

async function ensureIndex(es: Client, index: string, mappings: object, log: Logger): Promise<void> {
  if (await es.indices.exists({ index })) return;
  try {
    await es.indices.create({ index, settings, mappings: structuredClone(mappings) as never });
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
): Promise<void> {
  const name = `rxingest-${eventsIndexWildcard(pattern).replace(/\*/g, 'x')}`;
  const lifecycle = ilmPolicy !== undefined && (await hasIlm(es, log)) ? ilmPolicy : undefined;
  const body = {
    index_patterns: [eventsIndexWildcard(pattern)],
    template: {
      settings: lifecycle === undefined ? settings : { ...settings, 'index.lifecycle.name': lifecycle },
      mappings: structuredClone(eventsMapping) as never,
    },
    _meta: { managed_by: 'rxingest' },
  };
  const existing = await es.indices.getIndexTemplate({ name }).catch(() => undefined);
  const current = existing?.index_templates?.[0]?.index_template;
  const currentPolicy = (
    current?.template?.settings as { index?: { lifecycle?: { name?: string } } } | undefined
  )?.index?.lifecycle?.name;
  if (current && sameJson(current.template?.mappings, eventsMapping) && currentPolicy === lifecycle) {
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

/** Whether the cluster has index lifecycle management (the integ-test distribution has not). */
async function hasIlm(es: Client, log: Logger): Promise<boolean> {
  try {
    await es.ilm.getStatus();
    return true;
  } catch (err) {
    log.warn(
      { err: String(err) },
      'EVENTS_ILM_POLICY is set but this cluster has no index lifecycle management: the template goes without it',
    );
    return false;
  }
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
  if (data !== undefined && data.type !== undefined && data.type !== 'object' && data.type !== 'flattened') {
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
