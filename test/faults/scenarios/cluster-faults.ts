import { ConfigResourceTypes } from 'kafkajs';
import { expect } from 'vitest';
import { Pipeline } from '../../../harness/deployment/pipeline.js';
import { traffic } from '../../../harness/deployment/traffic.js';
import { busiestLeader, type PrivateKafkaCluster } from '../../../harness/servers/private-kafka-cluster.js';
import { stackEnv, waitFor } from '../../../harness/stack.js';
import { finish, type ScenarioReport, type Size, stopGracefully, whenCommitted } from './common.js';

export interface LeaderKillReport extends ScenarioReport {
  readonly killedNode: number;
  /** Partitions of the input topic the killed node led. */
  readonly ledPartitions: number;
  /** Committed records (of `messages`) when the node was killed. */
  readonly committedAtKill: number;
  /** From the kill until every partition it led had committed past where it stood (ms). */
  readonly recoveryMs: number;
  readonly runtimeMs: number;
}

/**
 * On a 3-node cluster (topics replicated 3 times, min ISR 2): two workers in one group
 * ingest 12 partitions, and mid-run the node that leads the most of them is SIGKILLed and
 * left dead. Its partitions, and whatever group or transaction coordinator it held, move to
 * the two survivors; the workers must go on by themselves (nobody restarts them) and the
 * end state must be the contract's exactly.
 */
export async function leaderKilled(
  size: Size,
  cluster: PrivateKafkaCluster,
  seed = 77,
): Promise<LeaderKillReport> {
  const t0 = Date.now();
  const p = await Pipeline.create('faults-leader', {
    partitions: 12,
    servers: { ...stackEnv, kafkaBrokers: cluster.brokers },
  });
  try {
    // The scenario means something only if the topics are really replicated: check it (asking
    // a few times: each request goes to some broker, and metadata spreads a moment after creation).
    const meta = await waitFor('the new topics in the brokers’ metadata', async () => {
      for (let i = 0; i < 3; i++)
        await p.admin.fetchTopicMetadata({ topics: [p.names.topic, p.names.triggers] });
      return p.admin.fetchTopicMetadata({ topics: [p.names.topic, p.names.triggers] });
    });
    for (const t of meta.topics)
      for (const part of t.partitions)
        expect(part.replicas, `${t.name}/${part.partitionId} replicas`).toHaveLength(3);
    // The broker asked may not host the new topic yet either ("does not host this topic-partition").
    const configs = await waitFor('the new topic’s configuration', () =>
      p.admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          { type: ConfigResourceTypes.TOPIC, name: p.names.topic, configNames: ['min.insync.replicas'] },
        ],
      }),
    );
    expect(configs.resources[0]?.configEntries[0]?.configValue, 'min.insync.replicas').toBe('2');

    const workers = [p.spawn('a'), p.spawn('b')];
    // Still producing when the node dies: at the full size the workers commit most of the
    // run while it is being produced, and the kill must fall mid-run.
    const producing = p.produce(traffic(seed, size.messages, { ratePerSec: 50_000 }));
    producing.catch(() => undefined); // awaited after the recovery, where a failure shows
    await whenCommitted(p, size.messages * 0.25, size);

    // The coordinators' topics exist by now (the workers have committed): replicated too.
    const internal = await p.admin.fetchTopicMetadata({
      topics: ['__consumer_offsets', '__transaction_state'],
    });
    for (const t of internal.topics)
      for (const part of t.partitions)
        expect(part.replicas, `${t.name}/${part.partitionId} replicas`).toHaveLength(3);

    const victim = await busiestLeader(p.admin, p.names.topic);
    const meta2 = await p.admin.fetchTopicMetadata({ topics: [p.names.topic] });
    const led = meta2.topics[0]!.partitions.filter((x) => x.leader === victim.nodeId).map(
      (x) => x.partitionId,
    );
    const at = await committedByPartition(p);
    const committedAtKill = [...at.committed.values()].reduce((a, n) => a + n, 0);
    expect(committedAtKill, 'the kill falls mid-run, with most of the work still to do').toBeLessThan(
      size.messages * 0.75,
    );
    const killedAt = Date.now();
    await cluster.node(victim.nodeId).kill();

    // Recovered: every partition the dead node led has committed past where it stood (or
    // stood at its end already), through new leaders and coordinators.
    await waitFor(
      `the partitions node ${victim.nodeId} led (${led.join(', ')}) to commit again`,
      async () => {
        const now = await committedByPartition(p);
        return led.every((x) => {
          const c = now.committed.get(x) ?? 0;
          return c > (at.committed.get(x) ?? 0) || c === now.ends.get(x);
        });
      },
      { timeoutMs: size.waitMs, intervalMs: 100 },
    );
    const recoveryMs = Date.now() - killedAt;
    await producing;
    const after = await busiestLeader(p.admin, p.names.topic);
    expect(
      after.byNode[victim.nodeId],
      `partitions still led by the dead node ${victim.nodeId}`,
    ).toBeUndefined();

    const report = await finish(p, 'the busiest partition leader SIGKILLed', workers, size, {
      kills: 1,
      outages: `node ${victim.nodeId} (led ${led.length}/12) killed at ${committedAtKill} committed; partitions committing again after ${(recoveryMs / 1000).toFixed(1)} s`,
    });
    for (const w of workers) expect(w.child.exitCode, 'the workers went on by themselves').toBeNull();
    await Promise.all(workers.map(stopGracefully));
    return {
      ...report,
      killedNode: victim.nodeId,
      ledPartitions: led.length,
      committedAtKill,
      recoveryMs,
      runtimeMs: Date.now() - t0,
    };
  } finally {
    await p.cleanup();
  }
}

async function committedByPartition(
  p: Pipeline,
): Promise<{ committed: Map<number, number>; ends: Map<number, number> }> {
  const [ends, offsets] = await Promise.all([
    p.admin.fetchTopicOffsets(p.names.topic),
    p.admin.fetchOffsets({ groupId: p.names.group, topics: [p.names.topic] }),
  ]);
  return {
    committed: new Map(offsets[0]!.partitions.map((x) => [x.partition, Math.max(0, Number(x.offset))])),
    ends: new Map(ends.map((e) => [e.partition, Number(e.high)])),
  };
}
