import type { Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { BROKER_DEFAULT_MAX_MESSAGE_BYTES, TopicLimits } from '../../../../src/sinks/kafka/topic-limits.js';
import { capturedLog } from '../../../support/logs/captured-log.js';

type Resource = { type: number; name: string; configNames: string[] };

/** An admin that answers DescribeConfigs from tables (topics by name, brokers by node id), or refuses. */
function fakeAdmin(state: { topics: Map<string, string | Error>; broker?: string | Error }) {
  const asked: Resource[] = [];
  const admin = {
    describeCluster: async () => ({
      brokers: [{ nodeId: 7, host: 'h', port: 1 }],
      controller: 7,
      clusterId: 'c',
    }),
    describeConfigs: async ({ resources }: { resources: Resource[] }) => {
      asked.push(...resources);
      const [r] = resources;
      const v = r!.type === 2 ? state.topics.get(r!.name) : r!.name === '7' ? state.broker : undefined;
      if (v instanceof Error) throw v;
      const configName = r!.type === 2 ? 'max.message.bytes' : 'message.max.bytes';
      return {
        resources: [
          {
            resourceName: r!.name,
            configEntries: v === undefined ? [] : [{ configName, configValue: v }],
          },
        ],
      };
    },
  } as unknown as Admin;
  return { admin, asked };
}

const denied = () =>
  Object.assign(new Error('Topic authorization failed'), {
    name: 'KafkaJSProtocolError',
    type: 'TOPIC_AUTHORIZATION_FAILED',
  });

describe('TopicLimits', () => {
  it("reads each topic's max.message.bytes once, before it is needed", async () => {
    const { admin, asked } = fakeAdmin({
      topics: new Map([
        ['dlq', '65536'],
        ['triggers', '1048588'],
      ]),
    });
    const { log, lines } = capturedLog();
    const limits = new TopicLimits(admin, log);
    expect(limits.knowsAll(['dlq'])).toBe(false);
    await limits.ensure(['dlq', 'triggers', 'dlq']);
    await limits.ensure(['dlq']);
    expect(limits.knowsAll(['dlq', 'triggers'])).toBe(true);
    expect(limits.limitOf('dlq')).toBe(65_536);
    expect(limits.limitOf('triggers')).toBe(1_048_588);
    expect(asked.map((r) => [r.type, r.name, r.configNames])).toEqual([
      [2, 'dlq', ['max.message.bytes']],
      [2, 'triggers', ['max.message.bytes']],
    ]);
    expect(lines.filter((l) => l.msg === 'output topic record limit read')).toHaveLength(2);
    expect(lines[0]).toMatchObject({ outputTopic: 'dlq', maxMessageBytes: 65_536 });
  });

  it("falls back to the broker's message.max.bytes, then to the broker default, saying so", async () => {
    const state = {
      topics: new Map<string, string | Error>([['dlq', denied()]]),
      broker: '2000000' as string | Error,
    };
    const { admin } = fakeAdmin(state);
    const { log, lines } = capturedLog();
    const limits = new TopicLimits(admin, log);
    await limits.ensure(['dlq']);
    expect(limits.limitOf('dlq')).toBe(2_000_000);

    state.broker = denied();
    const other = new TopicLimits(admin, log);
    await other.ensure(['dlq']);
    expect(other.limitOf('dlq')).toBe(BROKER_DEFAULT_MAX_MESSAGE_BYTES);
    const warning = lines.find((l) => l.level === 40);
    expect(warning).toMatchObject({
      outputTopic: 'dlq',
      maxMessageBytes: BROKER_DEFAULT_MAX_MESSAGE_BYTES,
      reason: 'KafkaJSProtocolError: Topic authorization failed',
    });
  });

  it('reads again on demand: a lowered limit is taken and logged, concurrent asks share one read, a failed read keeps the last', async () => {
    const state = { topics: new Map<string, string | Error>([['dlq', '65536']]) };
    const { admin, asked } = fakeAdmin(state);
    const { log, lines } = capturedLog();
    const limits = new TopicLimits(admin, log);
    await limits.ensure(['dlq']);
    state.topics.set('dlq', '16384');
    await Promise.all([limits.reread(['dlq']), limits.reread(['dlq']), limits.reread(['dlq'])]);
    expect(asked).toHaveLength(2);
    expect(limits.limitOf('dlq')).toBe(16_384);
    expect(lines.at(-1)).toMatchObject({
      msg: "an output topic's max.message.bytes changed",
      outputTopic: 'dlq',
      maxMessageBytes: 16_384,
      previousMaxMessageBytes: 65_536,
    });

    state.topics.set('dlq', denied());
    await limits.reread(['dlq']);
    expect(limits.limitOf('dlq')).toBe(16_384);
  });
});
