import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { freePortFrom } from '../../../harness/ports.js';
import { type ParsedText, samples, sampleValue } from '../../../harness/prometheus-text.js';
import { stackEnv, waitFor } from '../../../harness/stack.js';
import { linesStarting, scrape } from '../../../harness/worker/observation.js';
import { type PrivateRedis, startPrivateRedis } from '../../support/servers/private-redis.js';

const MESSAGES = 12_000;
const AFTER_THAW = 3_000;

let redis: PrivateRedis;
let p: Pipeline;

beforeAll(async () => {
  redis = await startPrivateRedis();
  p = await Pipeline.create('pb-redis-breaker', {
    partitions: 4,
    servers: { ...stackEnv, redisUrl: redis.url },
  });
});

afterAll(async () => {
  redis?.thaw();
  await p?.cleanup();
  await redis?.dispose();
});

const redisRetries = (m: ParsedText) =>
  Object.fromEntries(
    samples(m, 'rxingest_retries_total', { target: 'redis' }).map((s) => [s.labels.reason, s.value]),
  );
const breakerState = async (port: number) =>
  sampleValue(await scrape(port), 'rxingest_breaker_state', { target: 'redis' });

describe('the Redis circuit breaker in a running worker', () => {
  it('opens within seconds of a SIGSTOP, ingestion goes on with every guarantee, and it closes after SIGCONT', async () => {
    const port = await freePortFrom(9590);
    const w = p.spawn('w', {
      ...p.controlEnv(port),
      BREAKER_OPEN_MS: '1000',
      BREAKER_OPEN_MAX_MS: '2000',
    });
    // About 12 s of traffic with copies (near and late): the freeze comes in the middle of it.
    const producing = p.produce(traffic(17, MESSAGES, { ratePerSec: 1_000 }));
    await p.waitCommitted(MESSAGES * 0.15, 90_000);
    const before = await scrape(port);
    expect(sampleValue(before, 'rxingest_breaker_state', { target: 'redis' })).toBe(0);
    expect(sampleValue(before, 'rxingest_redis_up')).toBe(1);

    redis.freeze();
    const frozenAt = Date.now();
    await waitFor(
      'rxingest_breaker_state{target="redis"} to read 2',
      async () => (await breakerState(port)) === 2,
      {
        timeoutMs: 15_000,
        intervalMs: 100,
      },
    );
    const openAfterMs = Date.now() - frozenAt;
    const committedAtOpen = await p.committedTotal();
    const atOpen = await scrape(port);
    // Ingestion goes on while Redis is frozen: commits move and nothing is paused for it.
    await p.waitCommitted(committedAtOpen + 1_000, 30_000);
    await producing;
    const frozen = await scrape(port);
    expect(
      samples(frozen, 'rxingest_partition_paused', { reason: 'breaker' }).every((s) => s.value === 0),
      'no partition paused for the Redis breaker',
    ).toBe(true);
    expect(sampleValue(frozen, 'rxingest_breaker_state', { target: 'elasticsearch' })).toBe(0);
    expect(sampleValue(frozen, 'rxingest_redis_up')).toBe(0);
    const retriesFrozen = redisRetries(frozen);
    expect(retriesFrozen.timeout, 'Redis calls that timed out').toBeGreaterThanOrEqual(1);
    expect(
      retriesFrozen['breaker-open'] ?? 0,
      'Redis calls the open breaker kept back, while frozen',
    ).toBeGreaterThan(redisRetries(atOpen)['breaker-open'] ?? 0);
    const committedFrozen = await p.committedTotal();

    redis.thaw();
    const thawedAt = Date.now();
    // Its probes are real calls: traffic after the thaw (an idle worker stays half-open).
    const producingAfter = p.produce(traffic(18, AFTER_THAW, { ratePerSec: 1_000 }));
    await waitFor(
      'rxingest_breaker_state{target="redis"} back to 0',
      async () => (await breakerState(port)) === 0,
      {
        timeoutMs: 20_000,
        intervalMs: 100,
      },
    );
    const closedAfterMs = Date.now() - thawedAt;
    await producingAfter;
    await p.waitForEnd(90_000);
    const expected = p.expected();
    const d = await p.assertContract(expected);
    const after = await scrape(port);
    const changes = linesStarting(w, 'Redis circuit breaker').map((l) => l.to);
    // One line per change: open, then probes (half-open) failing (open) until one succeeds.
    expect(changes[0]).toBe('open');
    expect(changes.at(-1)).toBe('closed');
    for (let i = 1; i < changes.length; i++) expect(changes[i]).not.toBe(changes[i - 1]);
    const report = {
      messages: MESSAGES + AFTER_THAW,
      events: expected.events.size,
      profiles: expected.profiles.size,
      triggers: expected.triggers.size,
      lost: d.missingEvents + d.wrongProfiles + d.missingTriggers + d.missingDeadLetters,
      duplicated: d.extraEvents + d.duplicateTriggers + d.duplicateDeadLetters,
      openAfterFreezeMs: openAfterMs,
      closedAfterThawMs: closedAfterMs,
      frozenForMs: thawedAt - frozenAt,
      committedAtOpen,
      committedWhileFrozen: committedFrozen - committedAtOpen,
      breakerChanges: changes,
      redisRetries: redisRetries(after),
    };
    process.stdout.write(`[pushback-redis-breaker] ${JSON.stringify(report)}\n`);
    expect(openAfterMs, 'breaker open after the freeze (ms)').toBeLessThan(10_000);
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 170_000);
});
