import {
  Client,
  type ClientOptions,
  errors,
  SniffingTransport,
  type TransportOptions,
} from '@elastic/elasticsearch';
import { ENGINE_SETTINGS, type EngineSetting } from '../config/engine-setting.js';

/**
 * Which search server ES_NODE points at. rxingest speaks to Elasticsearch 8 and 9 and to
 * OpenSearch 2 and 3 through the one @elastic/elasticsearch client; what differs is the
 * dialect: the media types of requests (Elasticsearch 8 refuses `compatible-with=9`,
 * OpenSearch refuses any vendor type) and whether answers must carry
 * `x-elastic-product: Elasticsearch` (OpenSearch's never do).
 */
export interface SearchEngine {
  readonly product: 'elasticsearch' | 'opensearch';
  readonly major: number;
  /** As the server reported it, or the major alone when the setting named the engine. */
  readonly version: string;
}

export { ENGINE_SETTINGS, type EngineSetting };

export const SUPPORTED_ENGINES = 'Elasticsearch 8 and 9, OpenSearch 2 and 3';

export function engineLabel(engine: { product: string; version: string }): string {
  const name =
    engine.product === 'elasticsearch'
      ? 'Elasticsearch'
      : engine.product === 'opensearch'
        ? 'OpenSearch'
        : engine.product;
  return `${name} ${engine.version}`;
}

export function isSupported(engine: SearchEngine): boolean {
  return engine.product === 'elasticsearch'
    ? engine.major === 8 || engine.major === 9
    : engine.major === 2 || engine.major === 3;
}

/** The engine a setting names, or undefined for `auto`. */
export function engineFromSetting(setting: EngineSetting): SearchEngine | undefined {
  if (setting === 'auto') return undefined;
  const [product, major] = setting.split('-') as ['elasticsearch' | 'opensearch', string];
  return { product, major: Number(major), version: major };
}

const plainJson = {
  jsonContentType: 'application/json',
  ndjsonContentType: 'application/x-ndjson',
  accept: 'application/json, text/plain',
};
const compatibleWith = (major: number) => ({
  jsonContentType: `application/vnd.elasticsearch+json; compatible-with=${major}`,
  ndjsonContentType: `application/vnd.elasticsearch+x-ndjson; compatible-with=${major}`,
  accept: `application/vnd.elasticsearch+json; compatible-with=${major},text/plain`,
});

type TransportClass = typeof SniffingTransport;

/**
 * The client's transport with the engine's headers and product check. Undefined for
 * Elasticsearch 9, which is what the client speaks by itself. Without an engine (the
 * detection's own requests): plain JSON, no product check, which every engine accepts.
 */
export function dialectTransport(engine: SearchEngine | undefined): TransportClass | undefined {
  if (engine?.product === 'elasticsearch' && engine.major === 9) return undefined;
  const vendoredHeaders = engine?.product === 'elasticsearch' ? compatibleWith(engine.major) : plainJson;
  const productCheck = engine?.product === 'elasticsearch' ? 'Elasticsearch' : undefined;
  return class DialectTransport extends SniffingTransport {
    constructor(opts: TransportOptions) {
      super({ ...opts, vendoredHeaders, productCheck });
    }
  };
}

/** What the detection found, before it is judged supported or not. */
export type Detected =
  | { readonly kind: 'engine'; readonly engine: SearchEngine }
  | { readonly kind: 'unknown'; readonly what: string };

interface NodesAnswer {
  nodes?: Record<string, { version?: string }>;
}
interface RootAnswer {
  version?: { number?: string; distribution?: string };
  tagline?: string;
}

const majorOf = (version: string) => Number.parseInt(version, 10);

/**
 * Asks the server what it is. Elasticsearch's test distributions have no `GET /` handler,
 * so the version comes from the local node's info and the product from the
 * `x-elastic-product` header every Elasticsearch since 7.14 sends; OpenSearch sends no such
 * header and names itself in `GET /` (`version.distribution`).
 * Throws the client's errors (connection, 401, TLS) for the caller to word.
 */
export async function detectSearchEngine(options: Omit<ClientOptions, 'Transport'>): Promise<Detected> {
  const client = new Client({ ...options, Transport: dialectTransport(undefined) });
  try {
    const nodes = await client.transport.request<NodesAnswer>(
      { method: 'GET', path: '/_nodes/_local', querystring: { filter_path: 'nodes.*.version' } },
      { meta: true },
    );
    const nodeVersion = Object.values(nodes.body?.nodes ?? {})[0]?.version;
    if (nodes.headers?.['x-elastic-product'] === 'Elasticsearch' && nodeVersion !== undefined) {
      return {
        kind: 'engine',
        engine: { product: 'elasticsearch', major: majorOf(nodeVersion), version: nodeVersion },
      };
    }
    const root = await client.transport
      .request<RootAnswer>({ method: 'GET', path: '/' }, { meta: true })
      .then((r) => r.body)
      .catch((err: unknown) => {
        if (err instanceof errors.ResponseError) return undefined;
        throw err;
      });
    const version = root?.version?.number ?? nodeVersion;
    if (root?.version?.distribution === 'opensearch' && version !== undefined) {
      return { kind: 'engine', engine: { product: 'opensearch', major: majorOf(version), version } };
    }
    if (version !== undefined && /for search/i.test(root?.tagline ?? '')) {
      // An Elasticsearch older than 7.14 (no product header), or a fork that says it is one.
      return {
        kind: 'engine',
        engine: { product: 'elasticsearch', major: majorOf(version), version },
      };
    }
    const distribution = root?.version?.distribution;
    return {
      kind: 'unknown',
      what: `an unknown server${distribution ? ` (distribution "${distribution}")` : ''}${version ? ` version ${version}` : ''}`,
    };
  } finally {
    await client.close();
  }
}
