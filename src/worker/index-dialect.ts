import type { SearchEngine } from '../clients/search-engine.js';

/**
 * How each engine keeps the promise that every field of `data` is searchable and that a
 * field whose type changes between messages (a number for one client, a string for
 * another) is indexed both times instead of refused with a 400.
 *
 * - Elasticsearch: `data` is `dynamic: runtime`: every field becomes a runtime field of the
 *   type it first had, read from `_source` at query time; later values of another type stay
 *   in `_source` and never fail indexing.
 * - OpenSearch has no runtime fields: `data` is a `flat_object`, which indexes every leaf
 *   value, whatever its JSON type, as a keyword string under its dotted path
 *   (`data.plan`, `data.address.city`). Queries are string queries: term, terms, prefix,
 *   wildcard, match, exists, and ranges compared as strings.
 *
 * `fieldVersions` is the merge's bookkeeping: stored, never indexed.
 */
export interface IndexDialect {
  readonly profilesMapping: object;
  readonly eventsMapping: object;
  /** Settings of every index rxingest creates (and of the events template). */
  readonly settings: Readonly<Record<string, unknown>>;
}

const dataField = (engine: SearchEngine | undefined) =>
  engine?.product === 'opensearch'
    ? ({ type: 'flat_object' } as const)
    : ({ type: 'object', dynamic: 'runtime' } as const);

export function profilesMappingFor(engine?: SearchEngine) {
  return {
    properties: {
      clientId: { type: 'keyword' },
      version: { type: 'long' },
      data: dataField(engine),
      fieldVersions: { type: 'object', enabled: false },
    },
  } as const;
}

export function eventsMappingFor(engine?: SearchEngine) {
  return {
    properties: {
      clientId: { type: 'keyword' },
      name: { type: 'keyword' },
      ts: { type: 'date', format: 'strict_date_optional_time||epoch_millis' },
      data: dataField(engine),
      origin: {
        properties: { topic: { type: 'keyword' }, partition: { type: 'integer' }, offset: { type: 'long' } },
      },
    },
  } as const;
}

/** The dialect of `engine`; without one, Elasticsearch 9's. */
export function indexDialect(engine?: SearchEngine): IndexDialect {
  return {
    profilesMapping: profilesMappingFor(engine),
    eventsMapping: eventsMappingFor(engine),
    // Past the field limit, new field names stay in _source unmapped instead of failing every
    // later document. OpenSearch has no such setting (and refuses it); its flat_object is one field.
    settings: ignoresFieldsBeyondLimit(engine)
      ? { 'index.mapping.total_fields.ignore_dynamic_beyond_limit': true }
      : {},
  };
}

/** Elasticsearch from 8.13 on; an engine named by ES_ENGINE alone counts as its latest minor. */
function ignoresFieldsBeyondLimit(engine: SearchEngine | undefined): boolean {
  if (engine === undefined) return true;
  if (engine.product !== 'elasticsearch') return false;
  const [major, minor] = engine.version.split('.').map(Number);
  return (major ?? 0) > 8 || minor === undefined || (major === 8 && minor >= 13);
}
