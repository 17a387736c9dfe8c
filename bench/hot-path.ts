/**
 * Per-record hot paths, each against what it replaced, in one process and one
 * run (rounds interleaved, order swapped each round, median of the rounds):
 *
 *   windowed seen-set       the dedup window's ids in typed arrays off the V8 heap against a Set
 *                           of strings, on the same ids sliding through a 10-s window
 *   create action lines     serialised once as a string against JSON.stringify of the object
 *   _bulk body              each line encoded once into one Buffer against one joined string,
 *                           which the HTTP client then measured and copied into a Buffer
 *   latency histogram       a batch's latencies counted into typed arrays (BatchedHistogram)
 *                           against prom-client's observe, bound once, called per value
 *   kafkajs record decode   the installed (patched) decoder and offset filter against
 *                           kafkajs 2.2.4's as published, on a batch of 500 events
 *
 * In-memory, no servers. Run it pinned (`taskset -c 1 npm run bench -- --only hotpath`) to
 * keep the scheduler out of the figures.
 */
import { createRequire } from 'node:module';
import { Histogram, Registry } from 'prom-client';
import { BatchedHistogram } from '../src/metrics/batched-histogram.js';
import { E2E_BUCKETS } from '../src/metrics/metric-labels.js';
import { createWindowedIdSet } from '../src/model/windowed-id-set.js';
import { createWindowedSeenSet } from '../src/operators/swept-seen-set.js';
import { bulkBody, createActionLine } from '../src/sinks/elasticsearch/bulk.js';
import type { Section } from './lib/report.js';
import { fmt, median } from './lib/stats.js';

export interface HotPathOptions {
  readonly quick: boolean;
  readonly log: (line: string) => void;
}

interface Variant {
  readonly label: string;
  /** Does the work once over the inputs; returns how many items it did (ns per item is reported). */
  readonly run: () => number | Promise<number>;
}

interface Case {
  readonly name: string;
  readonly unit: string;
  /** Runs per timing (each run is one pass over the case's inputs). */
  readonly reps: number;
  readonly now: Variant;
  readonly before: Variant;
}

// ------------------------------------------------------------------ the cases

function seenSetCase(): Case {
  // 500,000 ids of which 1% come again, as in the benchmarks' workload, 25,000 a second: the
  // 10-s window fills to 250,000 ids and then slides, as in a worker draining a backlog.
  const ids = Array.from({ length: 500_000 }, (_, i) => `9ce301f0-b882-4f5c-${(i * 7919) % 495_000}-7f3a`);
  const admitAll = (seen: { admit(id: string): boolean }, clock: { t: number }) => {
    for (const id of ids) {
      clock.t += 0.04;
      seen.admit(id);
    }
    return ids.length;
  };
  return {
    name: 'windowed seen-set, admit (sliding 10-s window of 250,000 ids)',
    unit: 'id',
    reps: 1,
    now: {
      label: 'createWindowedIdSet (typed arrays, off the V8 heap)',
      run: () => {
        const clock = { t: 0 };
        return admitAll(
          createWindowedIdSet(10_000, () => clock.t),
          clock,
        );
      },
    },
    before: {
      label: 'createWindowedSeenSet (a Set of strings), as before',
      run: () => {
        const clock = { t: 0 };
        return admitAll(
          createWindowedSeenSet<string>(10_000, () => clock.t),
          clock,
        );
      },
    },
  };
}

function actionLineCase(): Case {
  const ids = Array.from({ length: 10_000 }, (_, i) => `evt-${i}-7f3a`);
  const index = 'rxingest-events';
  const indexJson = JSON.stringify(index);
  let sink = 0;
  return {
    name: '_bulk create action line',
    unit: 'line',
    reps: 20,
    now: {
      label: 'createActionLine (a string)',
      run: () => {
        for (const id of ids) sink += createActionLine(indexJson, id).length;
        return ids.length;
      },
    },
    before: {
      label: 'JSON.stringify of the action object',
      run: () => {
        for (const id of ids) sink += JSON.stringify({ create: { _index: index, _id: id } }).length;
        return ids.length + (sink < 0 ? 1 : 0);
      },
    },
  };
}

/** A request's `_bulk` body for 500 events (action line + document each), as it goes out: bytes. */
function bulkBodyCase(): Case {
  const operations: unknown[] = [];
  for (let i = 0; i < 500; i++) {
    const id = `9ce301f0-b882-4f5c-${(i * 7919) % 495_000}-7f3a`;
    operations.push(createActionLine('"rxingest-events-2026.12.04"', id), {
      id,
      clientId: `client-${(i * 31) % 10_000}`,
      ts: '2026-12-04T15:58:10.123Z',
      name: 'page_view',
      data: { url: `/products/${i}?ref=home`, ms: i % 400, tags: ['a', 'b'] },
      origin: `rxingest.events/3/${100_000 + i}`,
    });
  }
  let sink = 0;
  return {
    name: '_bulk body of 500 events, as bytes on the wire',
    unit: 'document',
    reps: 20,
    now: {
      label: 'bulkBody: each line encoded once into one Buffer',
      run: () => {
        sink += bulkBody(operations).length;
        return operations.length / 2;
      },
    },
    before: {
      label: 'lines joined into one string, measured and copied to a Buffer (the HTTP client)',
      run: () => {
        const lines = operations.map((op) => (typeof op === 'string' ? op : JSON.stringify(op)));
        lines.push('');
        const text = lines.join('\n');
        sink += Buffer.byteLength(text) + Buffer.from(text).length;
        return operations.length / 2 + (sink < 0 ? 1 : 0);
      },
    },
  };
}

/**
 * The latency histograms, fed a batch's latencies in ms: the worker's BatchedHistogram against
 * what it replaced, prom-client's observe bound once and called per value.
 */
function latencyHistogramCase(): Case {
  const buckets = E2E_BUCKETS;
  const ms = Array.from({ length: 500 }, (_, i) => (i * 7919) % 3_000);
  const batched = new BatchedHistogram('bench_batched', 'bench', buckets, [{}], new Registry());
  const bound = new Histogram({ name: 'bench_bound', help: 'bench', buckets, registers: [] }).labels()
    .observe;
  return {
    name: 'latency histogram observe',
    unit: 'observation',
    reps: 400,
    now: {
      label: 'BatchedHistogram.observeMs(batch)',
      run: () => {
        batched.observeMs(0, ms);
        return ms.length;
      },
    },
    before: {
      label: "prom-client's observe, bound once, per value",
      run: () => {
        for (const v of ms) if (Number.isFinite(v)) bound(v > 0 ? v / 1000 : 0);
        return ms.length;
      },
    },
  };
}

/**
 * A fetched record batch of 500 events (kafkajs's own encoder, the generator's shape of
 * value, a client key), decoded into records and filtered by the fetched offset the way a
 * consumer's Batch does: the installed (patched) kafkajs against 2.2.4 as published.
 */
async function kafkaDecodeCase(): Promise<Case> {
  const require = createRequire(import.meta.url);
  const Long = require('kafkajs/src/utils/long') as { fromValue(v: string): unknown };
  const Decoder = require('kafkajs/src/protocol/decoder') as new (b: Buffer) => { offset: number };
  const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
    RecordBatch: (o: object) => Promise<{ buffer: Buffer }>;
  };
  const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (o: object) => unknown;
  const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (
    d: object,
  ) => Promise<{ records: { offset: string }[] } & Record<string, unknown>>;
  const Batch = require('kafkajs/src/consumer/batch.js') as new (
    topic: string,
    fetchedOffset: string,
    data: object,
  ) => { messagesWithinOffset: unknown[] };
  const published = require('../harness/kafkajs-2.2.4/record-decode.original.cjs') as {
    decodeRecords(d: object, ctx: object): { offset: string }[];
    withinOffset(messages: { offset: string }[], fetchedOffset: string): unknown[];
  };
  const n = 500;
  const firstOffset = '1834567';
  const ts = 1_796_000_000_000;
  const { buffer } = await RecordBatch({
    firstOffset: Long.fromValue(firstOffset),
    firstTimestamp: ts,
    maxTimestamp: ts + n,
    lastOffsetDelta: n - 1,
    records: Array.from({ length: n }, (_, i) =>
      Record({
        offsetDelta: i,
        timestampDelta: i,
        key: Buffer.from(`c-${i % 97}`),
        value: Buffer.from(
          JSON.stringify({
            id: `evt-${i}-7f3a9c`,
            clientId: `c-${i % 97}`,
            type: 'event',
            name: 'page_view',
            ts: new Date(ts + i).toISOString(),
            data: { path: `/p/${i}`, ms: i % 300 },
          }),
        ),
      }),
    ),
  });
  // The records' count follows the batch header (57 bytes: offset, length, epoch, magic, crc,
  // attributes, last offset delta, two timestamps, producer id and epoch, first sequence).
  const recordsAt = 57;
  const context = { ...(await decodeBatch(new Decoder(buffer))), magicByte: 2 };
  delete (context as { records?: unknown }).records;
  const partition = (messages: unknown[]) => ({ partition: 0, highWatermark: '0', messages });
  let sink = 0;
  return {
    name: 'kafkajs record decode + fetched-offset filter',
    unit: 'record',
    reps: 40,
    now: {
      label: 'installed kafkajs (patched: Numbers, in place)',
      run: async () => {
        const { records } = await decodeBatch(new Decoder(buffer));
        sink += new Batch('t', firstOffset, partition(records)).messagesWithinOffset.length;
        return n;
      },
    },
    before: {
      label: 'kafkajs 2.2.4 as published (Longs, a slice per record)',
      run: async () => {
        const d = new Decoder(buffer);
        d.offset = recordsAt;
        const records = published.decodeRecords(d, context);
        if (records.at(-1)?.offset !== String(BigInt(firstOffset) + BigInt(n - 1)))
          throw new Error('the published decoder did not read the batch');
        sink += published.withinOffset(records, firstOffset).length;
        return n + (sink < 0 ? 1 : 0);
      },
    },
  };
}

// ------------------------------------------------------------------ the run

/** ns per item of `v`, over `reps` runs. */
async function time(v: Variant, reps: number): Promise<number> {
  let items = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) items += await v.run();
  return Number(process.hrtime.bigint() - t0) / items;
}

export async function hotPathBenchmark(o: HotPathOptions): Promise<Section> {
  const rounds = o.quick ? 3 : 9;
  const cases = [
    seenSetCase(),
    actionLineCase(),
    bulkBodyCase(),
    latencyHistogramCase(),
    await kafkaDecodeCase(),
  ];
  const rows: { name: string; unit: string; now: string; before: string; nowNs: number; beforeNs: number }[] =
    [];
  for (const c of cases) {
    for (let i = 0; i < 3; i++) {
      await c.now.run();
      await c.before.run();
    }
    const reps = o.quick ? Math.max(1, c.reps / 4) : c.reps;
    const now: number[] = [];
    const before: number[] = [];
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        now.push(await time(c.now, reps));
        before.push(await time(c.before, reps));
      } else {
        before.push(await time(c.before, reps));
        now.push(await time(c.now, reps));
      }
    }
    const row = {
      name: c.name,
      unit: c.unit,
      now: c.now.label,
      before: c.before.label,
      nowNs: median(now),
      beforeNs: median(before),
    };
    o.log(
      `  ${c.name}: ${fmt(row.nowNs, 0)} ns per ${c.unit} (${c.now.label}) vs ${fmt(row.beforeNs, 0)} (${c.before.label})`,
    );
    rows.push(row);
  }
  return {
    id: 'hotpath',
    title: 'Per-record hot paths against what they replaced (in memory, one process)',
    tables: [
      {
        head: ['path', 'now', 'ns per item', 'before', 'ns per item', 'saved (ns per item)', 'now / before'],
        rows: rows.map((r) => [
          `${r.name} (per ${r.unit})`,
          r.now,
          fmt(r.nowNs, 0),
          r.before,
          fmt(r.beforeNs, 0),
          fmt(r.beforeNs - r.nowNs, 0),
          fmt(r.nowNs / r.beforeNs, 2),
        ]),
      },
    ],
    targets: [],
    notes: [
      `Median of ${rounds} interleaved rounds, the order swapped every round. The worker spends about 20–35 µs of CPU per document on this machine, so these are shares of a percent to a few percent each.`,
    ],
    plots: [],
    data: { rows },
  };
}
