import { describe, expect, it } from 'vitest';
import { EsPoolMonitor, esPoolStats, type PoolStats } from '../../../src/metrics/es-pool-monitor.js';
import { capturedLog, fakeClock } from '../../support/logs/captured-log.js';

const stats = (running: number, pending = 0, connected = running): PoolStats => ({
  connected,
  free: connected - running,
  pending,
  queued: pending,
  running,
  size: running + pending,
});

function monitorWith(current: { value: PoolStats[] }) {
  const clock = fakeClock();
  const { log, lines, warnings } = capturedLog();
  const published: { utilization: number; queued: number; connections: number }[] = [];
  const monitor = new EsPoolMonitor({
    readStats: () => current.value,
    maxConnections: 10,
    publish: (p) => published.push(p),
    log,
    now: clock.now,
  });
  /** One sample a second for `seconds`. */
  const run = (seconds: number) => {
    for (let i = 0; i < seconds; i++) {
      monitor.sample();
      clock.advance(1_000);
    }
  };
  return { monitor, run, lines, warnings, published };
}

describe('EsPoolMonitor', () => {
  it('publishes utilisation (busy / capacity over all nodes), the queue and open connections', () => {
    const current = { value: [stats(4, 3, 6), stats(2, 1, 2)] };
    const { monitor, published } = monitorWith(current);
    monitor.sample();
    expect(published).toEqual([{ utilization: 0.3, queued: 4, connections: 8 }]);
  });

  it('warns once when utilisation has stayed at or above 80% for a minute, and once when it drops', () => {
    const current = { value: [stats(9, 25)] };
    const { run, lines, warnings } = monitorWith(current);
    run(60); // samples at 0 … 59 s: high, but not yet for a whole minute
    expect(warnings()).toHaveLength(0);
    run(1); // 60 s
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]!.msg).toContain('above 80% for 60 s');
    expect(warnings()[0]!.msg).toContain('pool starvation');
    expect(warnings()[0]).toMatchObject({ utilization: 0.9, busy: 9, capacity: 10, queued: 25 });
    run(120); // still high: no more lines
    expect(warnings()).toHaveLength(1);
    current.value = [stats(2)];
    run(10);
    const ended = lines.filter((l) => l.level === 30);
    expect(ended).toHaveLength(1);
    expect(ended[0]!.msg).toMatch(/back below 80% after 18\d s/);
    expect(warnings()).toHaveLength(1);
  });

  it('says nothing for high utilisation that breaks off before a minute', () => {
    const current = { value: [stats(10)] };
    const { run, lines } = monitorWith(current);
    for (let i = 0; i < 5; i++) {
      current.value = [stats(10)];
      run(50);
      current.value = [stats(7)];
      run(1);
    }
    expect(lines).toHaveLength(0);
  });

  it('reads no stats from a client without undici pools', () => {
    const client = { connectionPool: { connections: [{ pool: {} }, {}] } };
    expect(esPoolStats(client as never)).toEqual([]);
  });
});
