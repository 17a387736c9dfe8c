import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { WorkloadRecord } from '../../src/generator/workload.js';
import { kafkaLibs } from '../servers/private-kafka.js';
import { stackEnv } from '../stack.js';

const run = promisify(execFile);

/** Kafka's compression codecs, as both clients below name them. */
export type Codec = 'gzip' | 'snappy' | 'lz4' | 'zstd';
export const CODECS: readonly Codec[] = ['gzip', 'snappy', 'lz4', 'zstd'];

/** One line per record, `key<TAB>value`: how both command-line producers take keyed records. */
function keyedLines(records: readonly WorkloadRecord[]): string {
  return records
    .map((r) => {
      const value = r.value?.toString('utf8') ?? '';
      if (r.key === null || r.key.includes('\t') || /[\r\n]/.test(value))
        throw new Error(`record ${r.id ?? '?'} cannot travel as one keyed line`);
      return `${r.key}\t${value}\n`;
    })
    .join('');
}

async function withInput(cmd: string, args: string[], input: string): Promise<void> {
  const child = run(cmd, args, { maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin?.end(input);
  await child;
}

/** Sends the records in order with kcat (librdkafka), batches compressed with `codec`. */
export function produceWithKcat(
  topic: string,
  records: readonly WorkloadRecord[],
  codec: Codec | 'none',
  brokers = stackEnv.kafkaBrokers,
): Promise<void> {
  return withInput(
    'kcat',
    ['-P', '-b', brokers, '-t', topic, '-K', '\t', '-z', codec, '-X', 'linger.ms=50', '-X', 'acks=all'],
    keyedLines(records),
  );
}

/**
 * Sends the records in order with the Java client's console producer from the stack's jars:
 * its snappy is snappy-java's framed stream, its lz4 Kafka's own frame writer.
 */
export function produceWithJavaClient(
  topic: string,
  records: readonly WorkloadRecord[],
  codec: Codec,
  brokers = stackEnv.kafkaBrokers,
): Promise<void> {
  const cp = `${kafkaLibs('the Java console producer')}/*`;
  return withInput(
    'java',
    [
      '-cp',
      cp,
      'kafka.tools.ConsoleProducer',
      '--bootstrap-server',
      brokers,
      '--topic',
      topic,
      '--compression-codec',
      codec,
      '--request-required-acks',
      '-1',
      '--timeout',
      '50',
      '--property',
      'parse.key=true',
      '--property',
      'key.separator=\t',
    ],
    keyedLines(records),
  );
}
