import { describe, expect, it } from 'vitest';
import { Readiness } from '../../../src/http/readiness.js';

const fresh = () =>
  new Readiness({ joined: 'not yet joined', elasticsearch: 'ES not checked', kafka: 'no answer from Kafka' });

describe('Readiness', () => {
  it('is not ready at first, with every reason', () => {
    expect(fresh().report()).toEqual({
      ready: false,
      reason: 'not yet joined; ES not checked; no answer from Kafka',
      checks: {
        joined: { ok: false, reason: 'not yet joined' },
        elasticsearch: { ok: false, reason: 'ES not checked' },
        kafka: { ok: false, reason: 'no answer from Kafka' },
      },
    });
  });

  it('is ready only when every check is ok, and names what is missing', () => {
    const r = fresh();
    r.set('joined', true);
    r.set('kafka', true);
    expect(r.report()).toMatchObject({ ready: false, reason: 'ES not checked' });
    r.set('elasticsearch', true);
    expect(r.report().ready).toBe(true);
    expect(r.report().reason).toBeUndefined();
    r.set('elasticsearch', false, 'Elasticsearch unreachable: ECONNREFUSED');
    expect(r.report()).toMatchObject({ ready: false, reason: 'Elasticsearch unreachable: ECONNREFUSED' });
  });

  it('tells a change of state from a repeat', () => {
    const r = fresh();
    expect(r.set('joined', true)).toBe(true);
    expect(r.set('joined', true)).toBe(false);
    expect(r.set('joined', false, 'left')).toBe(true);
    expect(r.set('joined', false, 'left again')).toBe(false);
    expect(r.report().checks.joined.reason).toBe('left again');
  });
});
