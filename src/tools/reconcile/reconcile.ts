import type { Admin } from 'kafkajs';
import type { Config } from '../../config/config.js';
import { eventsIndexWildcard, isEventsIndexOf } from '../../model/event-index.js';
import { asCannotRun, CannotRun, elasticsearchFor, kafkaFor } from '../clients.js';
import { resolveIndices, scanIndices } from '../es-scan.js';
import type { Progress } from '../progress.js';
import { type ReadProgress, readTopics, type TopicRanges, topicOffsets } from '../topic-reader.js';
import type { ReadBounds } from './check-support.js';
import { EventsCheck, ProfilesCheck } from './document-checks.js';
import { Expectation } from './expectation.js';
import { buildReport, type ReconcileReport } from './report.js';
import type { Snapshot } from './snapshot.js';
import { DeadLettersCheck, TriggersCheck } from './topic-checks.js';

export interface ReconcileOptions {
  /** `--since`: only input records whose Kafka timestamp is at or after this. */
  readonly since?: Date;
  readonly progress?: Progress;
}

/**
 * Reads the input topics up to the group's committed offsets, computes what the contract
 * implies, and compares it with the profiles and events indices, the triggers topic and the
 * DLQ. The snapshot order matters when the worker is running: committed offsets first, then
 * the ends of the output topics, then the ends of the inputs, so that every trigger or dead
 * letter found comes from a record that was read.
 */
export async function reconcile(
  config: Config,
  { since, progress }: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const started = Date.now();
  const kafka = kafkaFor(config, 'reconcile');
  const es = await elasticsearchFor(config);
  const admin = kafka.admin();
  try {
    await admin.connect().catch((err) => {
      throw asCannotRun(err, config);
    });
    await es.indices.exists({ index: config.elasticsearch.profilesIndex }).catch((err) => {
      throw asCannotRun(err, config);
    });
    const existing = new Set(await admin.listTopics());
    const missing = config.kafka.topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      throw new CannotRun(
        `input topic(s) ${missing.join(', ')} do not exist on ${config.kafka.brokers.join(',')}`,
      );
    }

    const snapshot = await takeSnapshot(admin, config, existing, since);
    const bounds: ReadBounds = {
      committed: snapshot.committed,
      sinceStart: snapshot.partial ? snapshot.readFrom : undefined,
    };

    progress?.phase(`reading the DLQ ${config.kafka.dlqTopic}`);
    const dlq = new DeadLettersCheck(config.kafka.dlqTopic);
    await readTopics(
      kafka,
      snapshot.dlq,
      (records) => {
        for (const r of records) dlq.deadLetter(r.partition, r.offset, r.headers);
      },
      { onProgress: progress && ((p) => progress.read(p)) },
    );

    const exp = new Expectation({
      maxMessageBytes: config.graph.maxMessageBytes,
      tombstones: config.graph.tombstones,
      rules: config.triggerRules,
      triggersTopic: config.kafka.triggersTopic,
      committed: snapshot.committed,
      rejected: dlq.rejectedPositions(),
      sinceMs: since?.getTime(),
    });
    progress?.phase(
      `reading ${config.kafka.topics.join(', ')} up to the committed offsets of ${config.kafka.groupId}`,
    );
    await readTopics(
      kafka,
      snapshot.inputs,
      (records) => {
        for (const r of records) exp.add(r);
      },
      { onProgress: progress && ((p: ReadProgress) => progress.read(p)) },
    );
    dlq.compare(exp, bounds);

    progress?.phase(`reading the triggers topic ${config.kafka.triggersTopic}`);
    const triggers = new TriggersCheck(exp, snapshot.partial);
    await readTopics(kafka, snapshot.triggers, (records) => {
      for (const r of records) triggers.record(r.key, r.value);
    });
    triggers.finish();

    progress?.phase(`scanning the profiles index ${config.elasticsearch.profilesIndex}`);
    const profiles = new ProfilesCheck(exp, snapshot.partial);
    await scanIndices(es, await resolveIndices(es, config.elasticsearch.profilesIndex), (hits) => {
      for (const h of hits) profiles.doc(h.id, h.source);
      progress?.count(profiles.found);
    });
    profiles.finish();

    const pattern = config.elasticsearch.eventsIndex;
    progress?.phase(`scanning the events index ${eventsIndexWildcard(pattern)}`);
    const events = new EventsCheck(exp, pattern, bounds);
    const eventIndices = (await resolveIndices(es, eventsIndexWildcard(pattern))).filter((i) =>
      isEventsIndexOf(pattern, i),
    );
    let scanned = 0;
    await scanIndices(es, eventIndices, (hits) => {
      for (const h of hits) events.doc(h.index, h.id, h.source);
      scanned += hits.length;
      progress?.count(scanned);
    });
    events.finish();
    progress?.done();

    return buildReport({
      config,
      since,
      durationMs: Date.now() - started,
      snapshot,
      exp,
      dlq,
      events,
      eventIndices,
      profiles,
      triggers,
    });
  } catch (err) {
    throw asCannotRun(err, config);
  } finally {
    await admin.disconnect().catch(() => undefined);
    await es.close().catch(() => undefined);
  }
}

async function takeSnapshot(
  admin: Admin,
  config: Config,
  existing: Set<string>,
  since: Date | undefined,
): Promise<Snapshot> {
  const groupOffsets = await admin.fetchOffsets({
    groupId: config.kafka.groupId,
    topics: config.kafka.topics,
  });
  const whole = async (topic: string): Promise<TopicRanges[]> =>
    existing.has(topic)
      ? [
          {
            topic,
            partitions: (await topicOffsets(admin, topic)).map((o) => ({
              partition: o.partition,
              from: o.low,
              to: o.high,
            })),
          },
        ]
      : [];
  const dlq = await whole(config.kafka.dlqTopic);
  const triggers = await whole(config.kafka.triggersTopic);

  const committed = new Map<string, bigint>();
  const readFrom = new Map<string, bigint>();
  const beyond = new Map<string, bigint>();
  let partial = since !== undefined;
  const inputs: TopicRanges[] = [];
  for (const topic of config.kafka.topics) {
    const offsets = await topicOffsets(admin, topic);
    const bySince = since
      ? new Map(
          (await admin.fetchTopicOffsetsByTimestamp(topic, since.getTime())).map((o) => [
            o.partition,
            BigInt(o.offset),
          ]),
        )
      : undefined;
    const group = new Map(
      (groupOffsets.find((g) => g.topic === topic)?.partitions ?? []).map((p) => [
        p.partition,
        BigInt(p.offset),
      ]),
    );
    const partitions = offsets.map((o) => {
      const tp = `${topic}/${o.partition}`;
      const c = group.get(o.partition) ?? -1n;
      // No committed offset: nothing is expected yet. A committed offset below the log start:
      // retention removed records that were done.
      const upTo = c < 0n ? o.low : c > o.high ? o.high : c < o.low ? o.low : c;
      const from = bySince?.get(o.partition) ?? o.low;
      // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers only)
      const start = from > o.low ? from : o.low;
      if (o.low > 0n) partial = true;
      committed.set(tp, upTo);
      readFrom.set(tp, start);
      beyond.set(tp, o.high - upTo);
      // Read past the committed offsets to the end: those records are pending, and output
      // they already caused is not taken for a difference.
      return { partition: o.partition, from: start, to: o.high };
    });
    inputs.push({ topic, partitions });
  }
  const missingOutputTopics = [config.kafka.dlqTopic, config.kafka.triggersTopic].filter(
    (t) => !existing.has(t),
  );
  return { inputs, dlq, triggers, committed, readFrom, beyond, partial, missingOutputTopics };
}
