import { Client, type ClientOptions, errors } from '@elastic/elasticsearch';
import { redactUrl } from '../config/redact-url.js';
import type { ElasticsearchSecurity } from '../config/security.js';
import {
  type Detected,
  detectSearchEngine,
  dialectTransport,
  ENGINE_SETTINGS,
  type EngineSetting,
  engineFromSetting,
  engineLabel,
  isSupported,
  type SearchEngine,
  SUPPORTED_ENGINES,
} from './search-engine.js';
import { StartupCheckError } from './startup-check-error.js';
import { tlsProblem } from './tls-problem.js';

/** Where and how to connect: the part of Config['elasticsearch'] every client needs. */
export interface ElasticsearchConnection extends ElasticsearchSecurity {
  readonly node: string;
}

/** Client options from the connection settings and the caller's own (timeouts, retries). */
export function elasticsearchClientOptions(
  conn: ElasticsearchConnection,
  options: Omit<ClientOptions, 'node' | 'nodes' | 'auth' | 'tls'> = {},
): ClientOptions {
  return {
    // Errors carry request metadata; keep credentials (headers, URL user info) out of them.
    redaction: { type: 'remove' },
    ...options,
    node: conn.node,
    ...(conn.auth !== undefined && { auth: conn.auth }),
    ...(conn.caCert !== undefined && { tls: { ca: conn.caCert } }),
  };
}

/**
 * The Elasticsearch client every part of rxingest uses (worker, demo, tools), speaking the
 * dialect of `engine` (resolveSearchEngine); without one, Elasticsearch 9's.
 */
export function createElasticsearch(
  conn: ElasticsearchConnection,
  options: Omit<ClientOptions, 'node' | 'nodes' | 'auth' | 'tls' | 'Transport'> = {},
  engine?: SearchEngine,
): Client {
  const transport = engine === undefined ? undefined : dialectTransport(engine);
  return new Client({
    ...elasticsearchClientOptions(conn, options),
    ...(transport !== undefined && { Transport: transport }),
  });
}

/**
 * The engine behind ES_NODE: the one ES_ENGINE names, or else the one the server says it
 * is. Throws a StartupCheckError (one line naming the server) for an engine rxingest does
 * not support, credentials or a certificate it refuses, or a server it cannot ask.
 */
export async function resolveSearchEngine(
  conn: ElasticsearchConnection & { readonly engine: EngineSetting },
): Promise<SearchEngine> {
  const named = engineFromSetting(conn.engine);
  if (named !== undefined) return named;
  let found: Detected;
  try {
    found = await detectSearchEngine(
      elasticsearchClientOptions(conn, { requestTimeout: 10_000, maxRetries: 2 }),
    );
  } catch (err) {
    // The client's error stays as the cause: the tools word it their own way.
    const stop = (line: string) =>
      Object.assign(new StartupCheckError('Elasticsearch', line), { cause: err });
    const cause = elasticsearchMisconfiguration(conn, err);
    if (cause !== undefined) throw stop(cause);
    if (err instanceof errors.ConnectionError || err instanceof errors.TimeoutError) {
      throw stop(`${where(conn)} is unreachable: ${err.message}`);
    }
    if (err instanceof errors.ResponseError) {
      throw stop(
        `${where(conn)}: could not tell which search engine it is (HTTP ${err.statusCode} to GET /_nodes/_local; the credentials need the cluster privilege "monitor"), set ES_ENGINE to one of ${ENGINE_SETTINGS.slice(1).join(', ')}`,
      );
    }
    throw err;
  }
  if (found.kind === 'unknown' || !isSupported(found.engine)) {
    const what = found.kind === 'unknown' ? found.what : engineLabel(found.engine);
    throw new StartupCheckError(
      'Elasticsearch',
      `${where(conn)} is ${what}, which rxingest does not support (supported: ${SUPPORTED_ENGINES})`,
    );
  }
  return found.engine;
}

/** What the start-up check needs: the connection and the indices the worker writes. */
export interface ElasticsearchCheckSettings extends ElasticsearchConnection {
  readonly profilesIndex: string;
  readonly eventsIndex: string;
}

/** What the worker does with its indices: create them, read (mget), write (bulk), check they exist. */
export const REQUIRED_INDEX_PRIVILEGES = ['read', 'index', 'create_index', 'view_index_metadata'] as const;

const where = (conn: ElasticsearchConnection) => `Elasticsearch at ${redactUrl(conn.node)}`;
const credentials = (conn: ElasticsearchConnection) =>
  conn.auth === undefined
    ? undefined
    : 'apiKey' in conn.auth
      ? 'ES_API_KEY'
      : `user "${conn.auth.username}" (ES_USERNAME/ES_PASSWORD)`;

/** A date-pattern index name (`events-{yyyy.MM.dd}`) as the wildcard its indices match. */
const asPattern = (index: string) => index.replace(/\{[^}]*\}/g, '*');

/**
 * The one-line cause when a request failed because of the configuration (credentials,
 * certificate), or undefined when Elasticsearch is merely unreachable or unwell.
 */
export function elasticsearchMisconfiguration(
  conn: ElasticsearchConnection,
  err: unknown,
): string | undefined {
  if (err instanceof errors.ResponseError && err.statusCode === 401) {
    const cred = credentials(conn);
    return cred === undefined
      ? `${where(conn)}: the server requires authentication (401): set ES_API_KEY or ES_USERNAME/ES_PASSWORD`
      : `${where(conn)}: authentication with ${cred} failed (401): wrong, expired or revoked credentials`;
  }
  const tls = tlsProblem(err);
  if (tls?.kind === 'untrusted') {
    return `${where(conn)}: TLS: ${tls.text}; set ES_CA_CERT to the CA that signed the server's certificate`;
  }
  if (tls !== undefined) return `${where(conn)}: TLS: ${tls.text}`;
  return undefined;
}

interface HasPrivilegesAnswer {
  username?: string;
  has_all_requested?: boolean;
  index?: Record<string, Record<string, boolean>>;
}

/**
 * Start-up check: authenticates and asks the cluster (`_security/user/_has_privileges`)
 * whether these credentials may do what the worker does with its two indices. Throws a
 * StartupCheckError (one line: the server and the cause) for a wrong API key or password,
 * an untrusted certificate, or a missing privilege. Returns quietly when security is off
 * (nothing to check) or the server is unreachable (the worker's own requests report that).
 */
export async function checkElasticsearch(es: Client, cfg: ElasticsearchCheckSettings): Promise<void> {
  const indices = [cfg.profilesIndex, cfg.eventsIndex];
  let answer: HasPrivilegesAnswer;
  try {
    answer = (await es.security.hasPrivileges({
      index: indices.map((i) => ({ names: [asPattern(i)], privileges: [...REQUIRED_INDEX_PRIVILEGES] })),
    })) as HasPrivilegesAnswer;
  } catch (err) {
    const cause = elasticsearchMisconfiguration(cfg, err);
    if (cause !== undefined) throw new StartupCheckError('Elasticsearch', cause);
    return; // security off (the API answers an error), or unreachable: nothing this check can add
  }
  if (answer.has_all_requested !== false) return;

  const missing = new Map<string, string[]>();
  for (const index of indices) {
    const granted = answer.index?.[asPattern(index)] ?? {};
    let lacking = REQUIRED_INDEX_PRIVILEGES.filter((p) => granted[p] !== true);
    // Creating an index that already exists is never needed (a date pattern keeps needing it).
    if (lacking.includes('create_index') && asPattern(index) === index) {
      const exists = await es.indices.exists({ index }).catch(() => false);
      if (exists) lacking = lacking.filter((p) => p !== 'create_index');
    }
    if (lacking.length > 0) missing.set(index, lacking);
  }
  if (missing.size === 0) return;
  const subject = answer.username ? `user "${answer.username}"` : 'these credentials';
  const via = cfg.auth !== undefined && 'apiKey' in cfg.auth ? ' (through ES_API_KEY)' : '';
  const parts = [...missing].map(([index, p]) => `index "${index}" (${p.join(', ')})`);
  throw new StartupCheckError(
    'Elasticsearch',
    `${where(cfg)}: ${subject}${via} lacks privileges: ${parts.join('; ')}; the worker needs ${REQUIRED_INDEX_PRIVILEGES.join(', ')}`,
  );
}
