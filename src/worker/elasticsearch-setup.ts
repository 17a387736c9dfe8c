import { type Client, errors } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { redactUrl } from '../config/redact-url.js';

/**
 * `data` is mapped `dynamic: runtime`: every field is searchable, and a field
 * that is a number for one client and a string for another never fails
 * indexing (an indexed dynamic mapping would reject the second as a 400).
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
  },
} as const;

/** Creates the two indices if they do not exist; an existing index is left as it is. */
export async function ensureIndices(es: Client, cfg: Config['elasticsearch'], log: Logger): Promise<void> {
  for (const [index, mappings] of [
    [cfg.profilesIndex, profilesMapping],
    [cfg.eventsIndex, eventsMapping],
  ] as const) {
    try {
      if (await es.indices.exists({ index })) continue;
      await es.indices.create({
        index,
        // Past the field limit, new field names stay in _source unmapped instead of failing
        // every later document that brings one: one client's odd keys cannot stop the rest.
        settings: { 'index.mapping.total_fields.ignore_dynamic_beyond_limit': true },
        mappings: structuredClone(mappings) as never,
      });
      log.info({ index }, 'created index');
    } catch (err) {
      if (
        err instanceof errors.ResponseError &&
        err.body?.error?.type === 'resource_already_exists_exception'
      )
        continue;
      if (err instanceof errors.ConnectionError) {
        throw new Error(`Elasticsearch at ${redactUrl(cfg.node)} is unreachable: ${err.message}`);
      }
      throw err;
    }
  }
}
