import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createElasticsearch, resolveSearchEngine } from '../../../src/clients/elasticsearch.js';
import type { SearchEngine } from '../../../src/clients/search-engine.js';

/** A server that answers `GET /_nodes/_local` and `GET /` the way one engine does. */
interface Persona {
  readonly nodesVersion: string;
  readonly productHeader?: string;
  /** The body of `GET /`; undefined: 405 (Elasticsearch's integ-test distribution). */
  readonly root?: object;
}

const personas: Record<string, Persona> = {
  es9: { nodesVersion: '9.2.4', productHeader: 'Elasticsearch' },
  es8: { nodesVersion: '8.19.8', productHeader: 'Elasticsearch' },
  es7: { nodesVersion: '7.17.0', productHeader: 'Elasticsearch' },
  es710: {
    nodesVersion: '7.10.2',
    root: { version: { number: '7.10.2' }, tagline: 'You Know, for Search' },
  },
  os2: { nodesVersion: '2.19.4', root: { version: { distribution: 'opensearch', number: '2.19.4' } } },
  os3: { nodesVersion: '3.3.2', root: { version: { distribution: 'opensearch', number: '3.3.2' } } },
  os1: { nodesVersion: '1.3.20', root: { version: { distribution: 'opensearch', number: '1.3.20' } } },
  other: { nodesVersion: '5.0.0', root: { version: { distribution: 'something', number: '5.0.0' } } },
};

let server: Server | undefined;
const seen: IncomingHttpHeaders[] = [];
afterEach(() => {
  server?.close();
  server = undefined;
  seen.length = 0;
});

async function serve(p: Persona): Promise<string> {
  server = createServer((req, res) => {
    seen.push(req.headers);
    const json = (status: number, body: object) => {
      res.writeHead(status, {
        'content-type': 'application/json',
        ...(p.productHeader !== undefined && { 'x-elastic-product': p.productHeader }),
      });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').split('?')[0];
    if (path === '/_nodes/_local') json(200, { nodes: { n1: { version: p.nodesVersion } } });
    else if (path === '/') p.root ? json(200, p.root) : json(405, { error: 'Incorrect HTTP method' });
    else json(200, { cluster_name: 'x', status: 'green' });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

describe('resolveSearchEngine', () => {
  it.each([
    ['es9', 'elasticsearch', 9, '9.2.4'],
    ['es8', 'elasticsearch', 8, '8.19.8'],
    ['os2', 'opensearch', 2, '2.19.4'],
    ['os3', 'opensearch', 3, '3.3.2'],
  ] as const)('tells %s apart: %s %i', async (name, product, major, version) => {
    const node = await serve(personas[name]!);
    expect(await resolveSearchEngine({ node, engine: 'auto' })).toEqual({ product, major, version });
  });

  it.each([
    ['es7', 'Elasticsearch 7.17.0'],
    ['es710', 'Elasticsearch 7.10.2'],
    ['os1', 'OpenSearch 1.3.20'],
    ['other', 'an unknown server (distribution "something") version 5.0.0'],
  ])('stops the start with one line naming an unsupported %s', async (name, what) => {
    const node = await serve(personas[name]!);
    const err = await resolveSearchEngine({ node, engine: 'auto' }).catch((e: Error) => e);
    expect(err).toMatchObject({ name: 'StartupCheckError' });
    expect((err as Error).message).toBe(
      `Elasticsearch at ${node} is ${what}, which rxingest does not support (supported: Elasticsearch 8 and 9, OpenSearch 2 and 3)`,
    );
  });

  it('asks nothing when ES_ENGINE names the engine', async () => {
    const node = await serve(personas.es8!);
    expect(await resolveSearchEngine({ node, engine: 'opensearch-2' })).toEqual({
      product: 'opensearch',
      major: 2,
      version: '2',
    });
    expect(seen).toHaveLength(0);
  });
});

describe('the client in an engine’s dialect', () => {
  const cases: [string, SearchEngine | undefined, string, string][] = [
    ['Elasticsearch 9', { product: 'elasticsearch', major: 9, version: '9.2.4' }, 'es9', 'compatible-with=9'],
    [
      'Elasticsearch 8',
      { product: 'elasticsearch', major: 8, version: '8.19.8' },
      'es8',
      'compatible-with=8',
    ],
  ];
  it.each(cases)('%s: sends its vendor media type', async (_label, engine, persona, marker) => {
    const node = await serve(personas[persona]!);
    const es = createElasticsearch({ node }, { maxRetries: 0 }, engine);
    await es.cluster.health();
    await es.bulk({ operations: [{ create: { _index: 'x', _id: '1' } }, { a: 1 }] }).catch(() => undefined);
    expect(seen.map((h) => h.accept)).toEqual([
      expect.stringContaining(marker),
      expect.stringContaining(marker),
    ]);
    expect(seen[1]!['content-type']).toBe(`application/vnd.elasticsearch+x-ndjson; ${marker}`);
    await es.close();
  });

  it('OpenSearch: plain JSON, and answers without x-elastic-product are accepted', async () => {
    const node = await serve(personas.os2!);
    const es = createElasticsearch(
      { node },
      { maxRetries: 0 },
      { product: 'opensearch', major: 2, version: '2.19.4' },
    );
    expect((await es.cluster.health()).status).toBe('green');
    await es.bulk({ operations: [{ create: { _index: 'x', _id: '1' } }, { a: 1 }] }).catch(() => undefined);
    expect(seen[0]!.accept).toBe('application/json, text/plain');
    expect(seen[1]!['content-type']).toBe('application/x-ndjson');
    await es.close();
  });

  it('Elasticsearch: an answer without x-elastic-product is refused (the product check stays)', async () => {
    const node = await serve(personas.os2!);
    const es = createElasticsearch(
      { node },
      { maxRetries: 0 },
      { product: 'elasticsearch', major: 8, version: '8.19.8' },
    );
    await expect(es.cluster.health()).rejects.toMatchObject({ name: 'ProductNotSupportedError' });
    await es.close();
  });
});
