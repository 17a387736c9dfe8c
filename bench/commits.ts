/**
 * Commits back to back: the worker's TransactionalCommitter against the real
 * broker, each commit (a few trigger records, the ledger record, the offset, in one
 * transaction) begun as soon as the last one returned, as a busy partition does. Side by
 * side in one run: the producer's first retry backoff as shipped (COMMIT_RETRY_FIRST_MS)
 * and kafkajs's default (300 ms). A transaction begun right after the last EndTxn is
 * refused with CONCURRENT_TRANSACTIONS until the broker has written its markers, and kafkajs
 * asks again only after that backoff.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { barChart } from '../harness/plot.js';
import { createRetryPolicy } from '../src/retry/retry-policy.js';
import { COMMIT_RETRY_FIRST_MS } from '../src/sinks/kafka/partition-takeover.js';
import { ProgressLedger } from '../src/sinks/kafka/progress-ledger.js';
import { TransactionalCommitter } from '../src/sinks/kafka/transactional-committer.js';
import type { OutRecord } from '../src/sinks/ports.js';
import type { Section } from './lib/report.js';
import { ensureStack, kafkaClient, RunResources } from './lib/stack.js';
import { fmt, summarize } from './lib/stats.js';

export interface CommitsOptions {
  readonly quick: boolean;
  readonly log: (line: string) => void;
}

const KAFKAJS_DEFAULT_MS = 300;
const TRIGGERS_PER_COMMIT = 20;

export async function commitsBenchmark(o: CommitsOptions): Promise<Section> {
  await ensureStack();
  const commits = o.quick ? 30 : 120;
  const kafka = kafkaClient('rxingest-bench-commits');
  const runId = `commits-${randomBytes(3).toString('hex')}`;
  const res = new RunResources(runId, kafka);
  const input = res.name('in');
  const triggers = res.name('triggers');
  const progress = res.name('progress');
  const groupId = res.name('group');
  res.groups.add(groupId);
  const admin = kafka.admin();
  await admin.connect();
  const opened: TransactionalCommitter[] = [];
  try {
    await res.createTopic(input, 2);
    await res.createTopic(triggers, 1);
    await res.createTopic(progress, 1);
    const silent = pino({ level: 'silent' });
    const ledger = new ProgressLedger(kafka, admin, progress, silent);
    const retry = createRetryPolicy({ baseMs: 100, maxMs: 1_000 });
    const settings = [
      {
        label: `shipped (first retry after ${COMMIT_RETRY_FIRST_MS} ms)`,
        retryFirstMs: COMMIT_RETRY_FIRST_MS,
      },
      { label: `kafkajs default (${KAFKAJS_DEFAULT_MS} ms)`, retryFirstMs: KAFKAJS_DEFAULT_MS },
    ];
    const committers = await Promise.all(
      settings.map(async (s, partition) => {
        const { committer } = await TransactionalCommitter.open(
          kafka,
          admin,
          ledger,
          { groupId, topic: input, partition, progressTopic: progress, retry, retryFirstMs: s.retryFirstMs },
          silent,
        );
        opened.push(committer);
        return committer;
      }),
    );
    const times = settings.map(() => [] as number[]);
    const offsets = settings.map(() => 0);
    const records: OutRecord[] = Array.from({ length: TRIGGERS_PER_COMMIT }, (_, i) => ({
      topic: triggers,
      key: `client-${i}`,
      value: JSON.stringify({ trigger: 'bench', i }),
    }));
    // Blocks of 10 commits, the settings taking turns (order reversed each block), so that a
    // drift of the broker falls on both alike; the first block of each is not counted.
    const block = 10;
    for (let b = 0; b < commits / block + 1; b++) {
      const order = b % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) {
        for (let i = 0; i < block; i++) {
          offsets[k]! += 100;
          const t0 = performance.now();
          await committers[k]!.commit(String(offsets[k]), records);
          if (b > 0) times[k]!.push(performance.now() - t0);
        }
      }
    }
    const rows = settings.map((s, k) => ({ label: s.label, ...summarize(times[k]!) }));
    for (const r of rows)
      o.log(
        `  ${r.label}: mean ${fmt(r.mean, 1)} ms, p50 ${fmt(r.p50, 1)}, p90 ${fmt(r.p90, 1)}, max ${fmt(r.max, 1)}`,
      );
    return {
      id: 'commits',
      title:
        'Commits back to back: one transaction each, the producer’s first retry backoff shipped vs kafkajs’s default',
      tables: [
        {
          head: [
            'first retry backoff',
            'commits',
            'mean (ms)',
            'p50 (ms)',
            'p90 (ms)',
            'p99 (ms)',
            'max (ms)',
          ],
          rows: rows.map((r) => [
            r.label,
            fmt(r.count, 0),
            fmt(r.mean, 1),
            fmt(r.p50, 1),
            fmt(r.p90, 1),
            fmt(r.p99, 1),
            fmt(r.max, 1),
          ]),
        },
      ],
      targets: [],
      notes: [
        `Each commit publishes ${TRIGGERS_PER_COMMIT} trigger records and the ledger record and commits the offset of one input partition, through the worker’s TransactionalCommitter, the next begun as soon as the last returned; the two settings take turns in blocks of ${block}, the first block of each not counted.`,
      ],
      plots: [
        {
          file: 'commits.svg',
          title: 'Commit time back to back',
          svg: barChart({
            title: 'Commit time back to back (mean and p90)',
            categories: rows.map((r) => r.label),
            series: [
              { name: 'mean', values: rows.map((r) => r.mean) },
              { name: 'p90', values: rows.map((r) => r.p90) },
            ],
            unit: 'ms',
          }),
        },
      ],
      data: { commits, rows },
    };
  } finally {
    for (const c of opened) await c.close().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    const problems = await res.cleanUp();
    if (problems.length > 0) o.log(`  clean-up problems: ${problems.join('; ')}`);
  }
}
