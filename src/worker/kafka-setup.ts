import type { Admin } from 'kafkajs';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';

/**
 * Input topics must exist (their partition count is a decision, not a default); gives how
 * many partitions they have in all.
 * The dead-letter, trigger and progress topics are created when missing, the DLQ with
 * room for the largest record a source topic may hold, the progress ledger compacted.
 */
export async function ensureTopics(
  admin: Admin,
  cfg: Config['kafka'],
  log: Logger,
): Promise<{ readonly inputPartitions: number }> {
  // Input topics may be created by another job started alongside the worker: wait a while.
  const deadline = Date.now() + cfg.topicWaitMs;
  let existing = new Set(await admin.listTopics());
  let missing = cfg.topics.filter((t) => !existing.has(t));
  if (missing.length > 0 && cfg.topicWaitMs > 0) {
    log.warn({ missing, waitMs: cfg.topicWaitMs }, 'input topics do not exist yet; waiting for them');
  }
  while (missing.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, Math.min(1_000, cfg.topicWaitMs)));
    existing = new Set(await admin.listTopics());
    missing = cfg.topics.filter((t) => !existing.has(t));
  }
  if (missing.length > 0) {
    throw new Error(
      `INGEST_TOPICS: topic(s) ${missing.join(', ')} do not exist on ${cfg.brokers.join(',')} ` +
        `(waited ${cfg.topicWaitMs} ms, KAFKA_TOPIC_WAIT_MS); create them first`,
    );
  }
  const meta = await admin.fetchTopicMetadata({ topics: cfg.topics });
  const partitions = Math.max(1, ...meta.topics.map((t) => t.partitions.length));
  const found = { inputPartitions: meta.topics.reduce((n, t) => n + t.partitions.length, 0) };
  const toCreate = [cfg.dlqTopic, cfg.triggersTopic, cfg.progressTopic]
    .filter((t) => !existing.has(t))
    .map((topic) => ({
      topic,
      // The progress ledger is read whole, rarely (after an offset reset): one compacted partition.
      numPartitions: topic === cfg.progressTopic ? 1 : partitions,
      configEntries:
        topic === cfg.dlqTopic
          ? [{ name: 'max.message.bytes', value: String(16 * 1024 * 1024) }]
          : topic === cfg.progressTopic
            ? [
                { name: 'cleanup.policy', value: 'compact' },
                { name: 'segment.ms', value: String(3_600_000) },
                { name: 'min.cleanable.dirty.ratio', value: '0.1' },
              ]
            : [],
    }));
  if (toCreate.length === 0) return found;
  try {
    await admin.createTopics({ topics: toCreate, waitForLeaders: true });
    log.info({ topics: toCreate.map((t) => t.topic), partitions }, 'created output topics');
    return found;
  } catch (err) {
    // Another worker may have created them first. On a cluster, the broker that answers may
    // not have heard of a topic created a moment ago (kafkajs's leader wait then fails with
    // UNKNOWN_TOPIC_OR_PARTITION): give the metadata a while to spread before giving up.
    const names = toCreate.map((t) => t.topic);
    const until = Date.now() + 15_000;
    for (;;) {
      if (await topicsHaveLeaders(admin, names)) return found;
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function topicsHaveLeaders(admin: Admin, topics: string[]): Promise<boolean> {
  try {
    const meta = await admin.fetchTopicMetadata({ topics });
    return meta.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
  } catch {
    return false;
  }
}
