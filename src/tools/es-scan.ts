import { type Client, errors } from '@elastic/elasticsearch';

export interface Hit {
  readonly index: string;
  readonly id: string;
  readonly source: unknown;
}

/**
 * Every document of the given indices, a page at a time (scroll, in index order), handed to
 * `onPage`. Indices that do not exist count as empty. Returns how many documents there were.
 */
export async function scanIndices(
  es: Client,
  indices: readonly string[],
  onPage: (hits: Hit[]) => void,
  { pageSize = 5_000 } = {},
): Promise<number> {
  if (indices.length === 0) return 0;
  let total = 0;
  let scrollId: string | undefined;
  try {
    let res = await es.search({
      index: indices.join(','),
      ignore_unavailable: true,
      allow_no_indices: true,
      size: pageSize,
      scroll: '2m',
      sort: ['_doc'],
      query: { match_all: {} },
    });
    for (;;) {
      scrollId = res._scroll_id ?? scrollId;
      const hits = res.hits.hits;
      if (hits.length === 0) break;
      total += hits.length;
      onPage(hits.map((h) => ({ index: h._index, id: h._id!, source: h._source })));
      res = await es.scroll({ scroll_id: scrollId!, scroll: '2m' });
    }
  } catch (err) {
    if (err instanceof errors.ResponseError && err.body?.error?.type === 'index_not_found_exception')
      return total;
    throw err;
  } finally {
    if (scrollId) await es.clearScroll({ scroll_id: scrollId }).catch(() => undefined);
  }
  return total;
}

/** The concrete indices a name or wildcard resolves to (none when nothing matches). */
export async function resolveIndices(es: Client, nameOrWildcard: string): Promise<string[]> {
  try {
    const res = await es.indices.get({
      index: nameOrWildcard,
      allow_no_indices: true,
      ignore_unavailable: true,
    });
    return Object.keys(res).sort();
  } catch (err) {
    if (err instanceof errors.ResponseError && err.statusCode === 404) return [];
    throw err;
  }
}
