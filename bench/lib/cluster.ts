/**
 * The 3-broker cluster a benchmark runs on: the local stack's when it is one
 * (`KAFKA_CLUSTER_SIZE=3 npm run stack:up`), else a private one for the benchmark's
 * duration (harness/servers/private-kafka-cluster.ts: its own ports, the shared single broker
 * untouched). Either way with the brokers' pids, for CPU accounting.
 */
import { Kafka, logLevel } from 'kafkajs';
import { startPrivateKafkaCluster } from '../../harness/servers/private-kafka-cluster.js';
import { pidOnPort, stackEnv } from './stack.js';

export interface BenchCluster {
  readonly brokers: string;
  readonly kafka: Kafka;
  /** `kafka-<node id>` → pid. */
  readonly pids: Record<string, number | undefined>;
  /** Where it came from, for the report. */
  readonly origin: string;
  /** Stops a private cluster; leaves the stack's alone. */
  release(): Promise<void>;
}

const client = (brokers: string) =>
  new Kafka({ clientId: 'rxingest-bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING });

async function stackBrokers(): Promise<{ nodeId: number; port: number }[]> {
  const admin = client(stackEnv.kafkaBrokers).admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.map((b) => ({ nodeId: b.nodeId, port: b.port }));
  } catch {
    return [];
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export async function benchCluster(log: (line: string) => void): Promise<BenchCluster> {
  const brokers = await stackBrokers();
  if (brokers.length >= 3) {
    const pids: Record<string, number | undefined> = {};
    for (const b of brokers) pids[`kafka-${b.nodeId}`] = await pidOnPort(b.port);
    const list = brokers.map((b) => `127.0.0.1:${b.port}`).join(',');
    log(`  Kafka: the local stack's ${brokers.length}-broker cluster (${list})`);
    return {
      brokers: list,
      kafka: client(list),
      pids,
      origin: `the local stack (${list})`,
      release: async () => {},
    };
  }
  log(
    `  Kafka: the local stack has ${brokers.length || 'no'} broker(s); starting a private 3-node cluster for this benchmark …`,
  );
  const cluster = await startPrivateKafkaCluster();
  const pids: Record<string, number | undefined> = {};
  for (const n of cluster.nodes) pids[`kafka-${n.id}`] = n.pid();
  log(`  Kafka: private 3-node cluster on ${cluster.brokers}`);
  return {
    brokers: cluster.brokers,
    kafka: client(cluster.brokers),
    pids,
    origin: `a private 3-node cluster (${cluster.brokers})`,
    release: () => cluster.dispose(),
  };
}
