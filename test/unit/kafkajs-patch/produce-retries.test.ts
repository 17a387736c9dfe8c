import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  assertKafkajsProduceRetries,
  installedSendMessages,
  leaderMoveScenario,
  retriesProduceExactlyOnce,
  type SendMessagesFactory,
} from '../../../src/kafkajs-patch/produce-retries.js';

const require = createRequire(import.meta.url);
const original = require('../../../harness/kafkajs-2.2.4/send-messages.original.cjs') as SendMessagesFactory;
const installed = installedSendMessages();
const each = (value: string) => [value];

describe('kafkajs produce retries when a partition leader moves (patches/kafkajs+2.2.4.patch)', () => {
  it('kafkajs as published loses the records of a partition that moved to a broker that had answered', async () => {
    const logs = await leaderMoveScenario(original, { broker2AnswersFirst: true });
    expect(logs.get(0)).toEqual([]);
    expect(logs.get(1)).toEqual(each('record for partition 1'));
  });

  it('kafkajs as published appends twice the records of a request still in flight when it retried', async () => {
    const logs = await leaderMoveScenario(original, { broker2AnswersFirst: false });
    expect(logs.get(1)).toEqual(['record for partition 1', 'record for partition 1']);
    expect(logs.get(2)).toEqual(['record for partition 2', 'record for partition 2']);
  });

  it.each([true, false])(
    'the installed kafkajs puts every record in its partition exactly once (broker 2 answers first: %s)',
    async (broker2AnswersFirst) => {
      const logs = await leaderMoveScenario(installed, { broker2AnswersFirst });
      expect([...logs]).toEqual([0, 1, 2].map((p) => [p, each(`record for partition ${p}`)]));
    },
  );

  it('the startup check passes on the installed kafkajs and would refuse the published one', async () => {
    await expect(assertKafkajsProduceRetries()).resolves.toBeUndefined();
    expect(await retriesProduceExactlyOnce(original)).toBe(false);
    expect(await retriesProduceExactlyOnce(installed)).toBe(true);
  });
});
