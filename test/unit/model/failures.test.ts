import { errors as es } from '@elastic/elasticsearch';
import { KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { classifyError, classifyItemStatus } from '../../../src/model/failures.js';

const response = (statusCode: number) =>
  new es.ResponseError({ body: {}, statusCode, headers: {}, warnings: null, meta: {} as never });

describe('failure classes', () => {
  it.each([
    [429, 'transient'],
    [500, 'transient'],
    [503, 'transient'],
    [400, 'bad-data'],
    [404, 'bad-data'],
    [200, 'unknown'],
  ])('bulk item status %i is %s', (status, cls) => {
    expect(classifyItemStatus(status)).toBe(cls);
  });

  it('classifies Elasticsearch client errors', () => {
    expect(classifyError(response(429))).toBe('transient');
    expect(classifyError(response(503))).toBe('transient');
    expect(classifyError(response(400))).toBe('bad-data');
    expect(classifyError(new es.ConnectionError('refused'))).toBe('transient');
    expect(classifyError(new es.TimeoutError('slow'))).toBe('transient');
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
  });

  it('classifies ioredis failures: offline, timed out, loading', () => {
    expect(classifyError(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(
      'transient',
    );
    expect(classifyError(new Error('Command timed out'))).toBe('transient');
    expect(classifyError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      'transient',
    );
    const loading = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), {
      name: 'ReplyError',
    });
    expect(classifyError(loading)).toBe('transient');
    const wrongType = Object.assign(new Error('WRONGTYPE Operation against a key'), { name: 'ReplyError' });
    expect(classifyError(wrongType)).toBe('unknown');
  });

  it('calls a plain bug unknown, so that the worker fails loudly', () => {
    expect(classifyError(new TypeError('x is undefined'))).toBe('unknown');
  });
});
