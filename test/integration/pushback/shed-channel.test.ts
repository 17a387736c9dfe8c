import { CommanderError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { createTopics, kafkaClient, stackEnv, uniqueName, waitFor } from '../../../harness/stack.js';
import { shedCommand, unshedCommand } from '../../../src/cli/shed-command.js';
import { ShedDecisionSubscriber } from '../../../src/protocol/shed-channel.js';

const controlTopic = uniqueName('control');
const group = uniqueName('group');
const orders = uniqueName('orders');
const reviews = uniqueName('reviews');
const env = {
  KAFKA_BROKERS: stackEnv.kafkaBrokers,
  INGEST_GROUP: group,
  INGEST_TOPICS: `${orders},${reviews}`,
  TOPIC_PRIORITIES: `${orders}:high,${reviews}:low`,
  CONTROL_TOPIC: controlTopic,
};

async function cli(command: typeof shedCommand, args: string[], e: Record<string, string> = env) {
  const out: string[] = [];
  const err: string[] = [];
  const cmd = command({ env: e, out: (l) => out.push(l), who: () => 'tester@test' })
    .exitOverride()
    .configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => err.push(s) });
  let exitCode = 0;
  try {
    await cmd.parseAsync(args, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    exitCode = e.exitCode;
  }
  return { out, err, exitCode };
}

const subscribers: ShedDecisionSubscriber[] = [];
afterAll(async () => {
  await Promise.all(subscribers.map((s) => s.stop()));
});

async function subscriber(g = group) {
  const sub = new ShedDecisionSubscriber(kafkaClient(`shed-sub-${subscribers.length}`), {
    controlTopic,
    group: g,
  });
  subscribers.push(sub);
  await sub.start();
  await sub.ready;
  return sub;
}

describe('shed decisions through the compacted control topic (real Kafka)', () => {
  it('a decision made by the CLI reaches two workers’ subscribers within seconds, and unshed lifts it', async () => {
    await createTopics([
      { topic: orders, numPartitions: 1 },
      { topic: reviews, numPartitions: 1 },
    ]);
    // The first shed creates the control topic (compacted); subscribe to an existing one.
    expect((await cli(unshedCommand, [reviews])).exitCode).toBe(0);
    const [a, b] = await Promise.all([subscriber(), subscriber()]);
    const other = await subscriber(uniqueName('another-group'));
    expect(a.current.size).toBe(0);

    const start = Date.now();
    const shed = await cli(shedCommand, [reviews, '--reason', 'incident 42']);
    expect(shed.exitCode).toBe(0);
    expect(shed.out.join('\n')).toContain(`shed ${reviews} for group ${group}`);
    await waitFor(
      'both subscribers to see the shed decision',
      () => a.current.has(reviews) && b.current.has(reviews),
      {
        timeoutMs: 10_000,
        intervalMs: 50,
      },
    );
    const seenAfterMs = Date.now() - start;
    console.log(`shed decision seen by two subscribers ${seenAfterMs} ms after the CLI started`);
    expect(a.current.get(reviews)).toMatchObject({
      topic: reviews,
      group,
      by: 'tester@test',
      reason: 'incident 42',
    });
    expect(other.current.size).toBe(0); // another group's workers are not affected

    // A worker that starts later reads the current decisions before it is ready.
    const late = await subscriber();
    expect([...late.current.keys()]).toEqual([reviews]);

    const list = await cli(shedCommand, ['--list', '--json']);
    expect(list.exitCode).toBe(0);
    const listed = JSON.parse(list.out.join(''));
    expect(listed).toMatchObject({ group, controlTopic, shed: [{ topic: reviews, by: 'tester@test' }] });

    expect((await cli(unshedCommand, [reviews])).exitCode).toBe(0);
    await waitFor(
      'both subscribers to see the unshed',
      () => !a.current.has(reviews) && !b.current.has(reviews),
      {
        timeoutMs: 10_000,
        intervalMs: 50,
      },
    );
    expect((await cli(shedCommand, ['--list'])).out.join('')).toContain(
      `no topic is shed by hand for group ${group}`,
    );
  });

  it('the control topic is compacted', async () => {
    const admin = kafkaClient('shed-admin').admin();
    await admin.connect();
    try {
      const res = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2 as never, name: controlTopic, configNames: ['cleanup.policy'] }],
      });
      expect(res.resources[0]!.configEntries[0]!.configValue).toBe('compact');
    } finally {
      await admin.disconnect();
    }
  });

  it('refuses a topic that is not an input topic, and a bad configuration, with exit 2', async () => {
    const bad = await cli(shedCommand, ['some-other-topic']);
    expect(bad.exitCode).toBe(2);
    expect(bad.err.join('')).toMatch(/topic "some-other-topic" is invalid: expected one of INGEST_TOPICS/);
    const badConfig = await cli(shedCommand, [orders], { ...env, CONTROL_TOPIC: orders });
    expect(badConfig.exitCode).toBe(2);
    expect(badConfig.err.join('')).toMatch(/^rxingest: invalid configuration: CONTROL_TOPIC=/);
  });
});
