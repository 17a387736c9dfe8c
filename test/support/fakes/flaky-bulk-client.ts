import { errors } from '@elastic/elasticsearch';
import { bulkLines } from './bulk-body.js';

/**
 * An Elasticsearch client whose `bulk` fails with a connection error a given
 * number of times, then creates every document (or answers the given item statuses);
 * `mget` of a 409's id answers a document created by `in/0/0`.
 */
export class FlakyBulkClient {
  calls = 0;
  constructor(
    private failures: number,
    private readonly itemStatuses: number[][] = [],
  ) {}

  async bulk({ operations: body }: { operations: Buffer }) {
    this.calls++;
    const operations = bulkLines(body);
    if (this.failures > 0) {
      this.failures--;
      throw new errors.ConnectionError('connect ECONNREFUSED 127.0.0.1:9200');
    }
    const statuses = this.itemStatuses.shift();
    const items = [];
    for (let i = 0; i < operations.length; i += 2) {
      items.push({ create: { status: statuses?.[i / 2] ?? 201 } });
    }
    return { items, errors: false, took: 1 };
  }

  async mget({ docs }: { docs: { _index: string; _id: string }[] }) {
    this.calls++;
    return {
      docs: docs.map((d) => ({
        ...d,
        found: true,
        _source: { origin: { topic: 'in', partition: 0, offset: 0 } },
      })),
    };
  }
}
