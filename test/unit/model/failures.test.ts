import { errors as es } from '@elastic/elasticsearch';
import { KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  causes,
  classifyError,
  classifyItemError,
  describeError,
  isTooLarge,
  RecordRejectedError,
} from '../../../src/model/failures.js';

// The errors are the client libraries' own classes: model/failures.ts recognises them by
// shape without importing the libraries, and these tests check that the shapes are right.

const response = (statusCode: number) =>
  new es.ResponseError({ body: {}, statusCode, headers: {}, warnings: null, meta: {} as never });

describe('classifyItemError: a bulk item Elasticsearch refused', () => {
  // Real item errors, as Elasticsearch 9 answers them.
  const mapping = {
    type: 'document_parsing_exception',
    reason: '[1:42] failed to parse field [data.age] of type [long]',
  };
  const nestedMapping = {
    type: 'mapper_parsing_exception',
    reason: 'failed to parse',
    caused_by: { type: 'illegal_argument_exception', reason: 'For input string: "abc"' },
  };

  it.each([
    ['a mapping refusal (document_parsing_exception)', 400, mapping],
    ['a mapper_parsing_exception', 400, nestedMapping],
    [
      'a strict mapping refusing a new field',
      400,
      { type: 'strict_dynamic_mapping_exception', reason: 'mapping set to strict' },
    ],
    [
      'a document refusal found in the cause chain',
      400,
      { type: 'exception', reason: 'x', caused_by: { type: 'x_content_parse_exception', reason: 'y' } },
    ],
    [
      'an illegal argument about a field',
      400,
      { type: 'illegal_argument_exception', reason: 'field [data] has a bad value' },
    ],
    ['a document too large (413)', 413, undefined],
    [
      'a document larger than the node takes (429 naming an operation over max_operation_size)',
      429,
      {
        type: 'es_rejected_execution_exception',
        reason:
          'Request contains an operation of size [10226] bytes, which exceeds the maximum allowed limit of [8192] bytes',
      },
    ],
  ])('is bad data for %s', (_, status, error) => {
    expect(classifyItemError(status, error)).toBe('bad-data');
  });

  it.each([
    [
      '429 es_rejected_execution_exception',
      429,
      { type: 'es_rejected_execution_exception', reason: 'rejected execution' },
    ],
    [
      '429 from the indexing-pressure limit (bytes in flight, not one operation)',
      429,
      {
        type: 'es_rejected_execution_exception',
        reason:
          'rejected execution of primary operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, primary_operation_bytes=70311, max_primary_bytes=65536]',
      },
    ],
    ['500', 500, { type: 'exception', reason: 'boom' }],
    [
      '503 unavailable_shards_exception',
      503,
      { type: 'unavailable_shards_exception', reason: 'primary shard is not active' },
    ],
    ['401 (credentials)', 401, { type: 'security_exception', reason: 'unable to authenticate user' }],
    [
      '403 (privilege)',
      403,
      { type: 'security_exception', reason: 'action [indices:data/write/bulk[s]] is unauthorized' },
    ],
    [
      '403 cluster_block_exception (read-only index)',
      403,
      {
        type: 'cluster_block_exception',
        reason: 'index [events] blocked by: [FORBIDDEN/8/index write (api)]',
      },
    ],
    [
      '404 index_not_found_exception (auto-create off)',
      404,
      { type: 'index_not_found_exception', reason: 'no such index [events]' },
    ],
    [
      'an illegal argument about an alias',
      400,
      { type: 'illegal_argument_exception', reason: 'no write index is defined for alias [events]' },
    ],
    [
      'an illegal argument about a closed index',
      400,
      { type: 'illegal_argument_exception', reason: 'index [events] is closed' },
    ],
    ['a 400 without any error body', 400, undefined],
  ])('is transient (the destination, never the record) for %s', (_, status, error) => {
    expect(classifyItemError(status, error)).toBe('transient');
  });

  it('does not loop forever on a cyclic cause chain', () => {
    const cyclic: { type: string; reason: string; caused_by?: unknown } = { type: 'exception', reason: 'x' };
    cyclic.caused_by = cyclic;
    expect(classifyItemError(400, cyclic as never)).toBe('transient');
  });
});

describe('classifyError: a thrown error', () => {
  it('classifies Elasticsearch client errors', () => {
    expect(classifyError(response(429))).toBe('transient');
    expect(classifyError(response(503))).toBe('transient');
    expect(classifyError(response(401))).toBe('transient');
    expect(classifyError(response(403))).toBe('transient');
    expect(classifyError(response(404))).toBe('transient');
    // A whole request refused as malformed is a request we built: a bug, not the record's fault.
    expect(classifyError(response(400))).toBe('unknown');
    expect(classifyError(new es.ConnectionError('refused'))).toBe('transient');
    expect(classifyError(new es.TimeoutError('slow'))).toBe('transient');
    expect(classifyError(new es.NoLivingConnectionsError('none', {} as never))).toBe('transient');
    expect(classifyError(new es.RequestAbortedError('aborted'))).toBe('transient');
  });

  it('classifies kafkajs errors, looking through what they wrap', () => {
    expect(
      classifyError(
        new KafkaJSProtocolError({ type: 'NOT_LEADER', code: 6, retriable: true, message: 'x' } as never),
      ),
    ).toBe('transient');
    expect(
      classifyError(
        new KafkaJSNumberOfRetriesExceeded(new Error('gave up'), { retryCount: 5, retryTime: 1 }),
      ),
    ).toBe('transient');
    expect(classifyError(new KafkaJSNonRetriableError('no'))).toBe('unknown');
    // kafkajs's own names: no coordinator or no metadata yet is the cluster's state, not ours.
    for (const name of [
      'KafkaJSGroupCoordinatorNotFound',
      'KafkaJSMetadataNotLoaded',
      'KafkaJSTopicMetadataNotLoaded',
    ])
      expect(classifyError(Object.assign(new KafkaJSNonRetriableError('x'), { name })), name).toBe(
        'transient',
      );
  });

  it('classifies ioredis failures: offline, timed out, refused, loading, read-only, out of memory', () => {
    expect(classifyError(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(
      'transient',
    );
    expect(classifyError(new Error('Command timed out'))).toBe('transient');
    expect(classifyError(new Error('Connection is closed.'))).toBe('transient');
    expect(classifyError(Object.assign(new Error('x'), { name: 'MaxRetriesPerRequestError' }))).toBe(
      'transient',
    );
    expect(classifyError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      'transient',
    );
    for (const reply of [
      'LOADING Redis is loading the dataset in memory',
      "READONLY You can't write against a read only replica.",
      "OOM command not allowed when used memory > 'maxmemory'.",
    ]) {
      expect(classifyError(Object.assign(new Error(reply), { name: 'ReplyError' })), reply).toBe('transient');
    }
    const wrongType = Object.assign(new Error('WRONGTYPE Operation against a key'), { name: 'ReplyError' });
    expect(classifyError(wrongType)).toBe('unknown');
  });

  it('finds the cause of an error that wraps another (`cause`, kafkajs `originalError`)', () => {
    const wrapped = new Error('Redis lookup failed', { cause: new Error('Command timed out') });
    expect(classifyError(wrapped)).toBe('transient');
    const twice = new Error('store failed', {
      cause: new Error('bulk failed', { cause: new es.ConnectionError('x') }),
    });
    expect(classifyError(twice)).toBe('transient');
    expect(causes(twice)).toHaveLength(3);
  });

  it('calls bad data what says so: RecordRejectedError or any error marked badData', () => {
    expect(classifyError(new RecordRejectedError('unknown plan'))).toBe('bad-data');
    expect(classifyError(Object.assign(new Error('nope'), { badData: true }))).toBe('bad-data');
    expect(classifyError(new Error('enrich gave up', { cause: new RecordRejectedError('x') }))).toBe(
      'bad-data',
    );
  });

  it('calls a plain bug unknown, so that the worker fails loudly', () => {
    expect(classifyError(new TypeError('x is undefined'))).toBe('unknown');
    expect(classifyError('a string')).toBe('unknown');
    expect(classifyError(undefined)).toBe('unknown');
  });

  it('stops after ten causes on a cyclic chain', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(causes(a)).toHaveLength(10);
    expect(classifyError(a)).toBe('unknown');
  });
});

describe('isTooLarge', () => {
  it('recognises too-large errors through the cause chain', () => {
    expect(isTooLarge({ type: 'MESSAGE_TOO_LARGE' })).toBe(true);
    expect(isTooLarge(new Error('x', { cause: { type: 'RECORD_LIST_TOO_LARGE' } }))).toBe(true);
    expect(isTooLarge(new Error('x', { cause: { type: 'LEADER_NOT_AVAILABLE' } }))).toBe(false);
    expect(isTooLarge(undefined)).toBe(false);
  });

  it('recognises a too-large refusal wrapped by kafkajs (its retrier, or as originalError)', () => {
    const refusal = new KafkaJSProtocolError({
      type: 'MESSAGE_TOO_LARGE',
      code: 10,
      retriable: false,
      message: 'too large',
    } as never);
    expect(isTooLarge(new KafkaJSNumberOfRetriesExceeded(refusal, { retryCount: 5, retryTime: 100 }))).toBe(
      true,
    );
    expect(isTooLarge(Object.assign(new Error('send failed'), { originalError: refusal }))).toBe(true);
  });
});

describe('describeError', () => {
  it('is one line: name and message, line breaks folded', () => {
    expect(describeError(new TypeError('bad\nthing\r\nhere'))).toBe('TypeError: bad thing here');
    expect(describeError('plain')).toBe('plain');
  });
});
