import { errors } from '@elastic/elasticsearch';
import { describe, expect, it } from 'vitest';
import { failureReason, RepeatedFailureLog } from '../../../src/log/repeated-failure-log.js';
import { capturedLog, fakeClock } from '../../support/logs/captured-log.js';

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9200'), { code: 'ECONNREFUSED' });

function setup(summaryEveryMs = 60_000) {
  const clock = fakeClock();
  const { log, lines } = capturedLog();
  const failures = new RepeatedFailureLog(log, {
    what: 'Elasticsearch requests',
    summaryEveryMs,
    now: clock.now,
  });
  return { clock, lines, failures };
}

describe('RepeatedFailureLog', () => {
  it('turns a retry every 50 ms for three minutes into one line, a summary a minute and one recovery', () => {
    const { clock, lines, failures } = setup();
    for (let t = 0; t < 180_000; t += 50) {
      failures.failure(refused(), { op: 'bulk' });
      clock.advance(50);
    }
    failures.success();
    expect(lines.map((l) => l.msg)).toEqual([
      'Elasticsearch requests failing; retrying with backoff (repeats are summarised every 60 s)',
      'Elasticsearch requests failing: 1,201 retries in the last 60 s',
      'Elasticsearch requests failing: 1,200 retries in the last 60 s',
      'Elasticsearch requests succeed again after 3,600 failed attempts over 180 s',
    ]);
    expect(lines[0]).toMatchObject({
      level: 40,
      op: 'bulk',
      state: 'failing',
      err: expect.stringContaining('ECONNREFUSED'),
    });
    expect(lines[1]).toMatchObject({ retries: 1201, periodS: 60 });
    expect(lines[3]).toMatchObject({ level: 30, state: 'recovered', retries: 3600 });
  });

  it('writes one line when the failure changes its nature', () => {
    const { clock, lines, failures } = setup();
    failures.failure(refused());
    failures.failure(refused());
    clock.advance(1_000);
    failures.failure(new errors.TimeoutError('Request timed out'));
    failures.failure(new errors.TimeoutError('Request timed out'));
    expect(lines.map((l) => l.msg)).toEqual([
      expect.stringContaining('failing; retrying'),
      'Elasticsearch requests still failing, now: TimeoutError',
    ]);
  });

  it('is silent on success when nothing failed, and starts afresh after a recovery', () => {
    const { lines, failures } = setup();
    failures.success();
    expect(lines).toHaveLength(0);
    failures.failure(refused());
    failures.success();
    failures.failure(refused());
    expect(lines.map((l) => l.state)).toEqual(['failing', 'recovered', 'failing']);
    expect(failures.failing).toBe(true);
  });

  it('names failures by a short, bounded reason', () => {
    expect(failureReason(refused())).toBe('Error ECONNREFUSED');
    expect(failureReason(new errors.ConnectionError('socket hang up'))).toBe('ConnectionError');
    expect(failureReason('odd')).toBe('string');
  });
});
