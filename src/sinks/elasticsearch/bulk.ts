import type { Client } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import { type ElasticsearchItemError, isOversizedOperation } from '../../model/failures.js';
import type { EventDocument } from '../ports.js';
import { type Attempt, attemptRequest, type RequestContext } from './request.js';
import { bulkOutcome, firstResult } from './request-outcome.js';

/** One item of a `_bulk` answer (`_seq_no`/`_primary_term` for the recent profiles). */
export type BulkItem = {
  status: number;
  error?: ElasticsearchItemError;
  _seq_no?: number;
  _primary_term?: number;
};
export type BulkAnswer = Record<string, BulkItem>;

/**
 * Only what the store reads of each item: the rest of an item (`_index`, `_id`, `_version`,
 * `result`, `_shards`) is most of a bulk answer, and costs Elasticsearch to write and the
 * worker to parse, per document. `_seq_no`/`_primary_term` only feed the recent profiles:
 * without them, half of what is left of each item.
 */
const ANSWER_FIELDS = 'items.*.status,items.*.error';
const ANSWER_FIELDS_WITH_SEQ_NO = `${ANSWER_FIELDS},items.*._seq_no,items.*._primary_term`;

/** Requests that go through whole, at the cap, before it doubles. */
const GROWTH_AFTER = 8;
/** A cap this high is no cap. */
const UNBOUNDED = 100_000;

/**
 * Sends items (`linesPerItem` lines each) in `_bulk` requests of at most `cap` items, one
 * cap per worker because the limit it learns is the cluster's. A request refused for its
 * size — whole (429 from the indexing-pressure limit, 413 above `http.max_content_length`)
 * or item by item (every item 429 inside a 200: the primary's share of the same limit) —
 * halves the cap, and its items come back as item-level 429s, retried with backoff by the
 * store in smaller requests. A full write queue refuses every item too, but a smaller
 * request would not help there: halving on it shrank requests to a few items each against
 * a busy node and cost it most of its throughput (the adaptive limit is what answers that). Without this a batch larger than the cluster takes at once is
 * sent again, and refused, forever. The cap doubles after a run of requests that went
 * through whole.
 */
export class BulkRequests {
  private cap = Infinity;
  private successes = 0;

  private readonly answerFields: string;

  constructor(
    private readonly client: Client,
    private readonly log: Logger,
    /** Whether the answers must carry each item's `_seq_no`/`_primary_term` (the recent profiles). */
    withSeqNo = true,
  ) {
    this.answerFields = withSeqNo ? ANSWER_FIELDS_WITH_SEQ_NO : ANSWER_FIELDS;
  }

  async send(
    context: RequestContext,
    operations: unknown[],
    linesPerItem: number,
  ): Promise<Attempt<BulkAnswer[]>> {
    const items = operations.length / linesPerItem;
    const cap = this.cap; // the parts may change it: slice by the cap this call started with
    if (items > cap) {
      const answers: BulkAnswer[] = [];
      for (let k = 0; k < items; k += cap) {
        const part = await this.send(
          context,
          operations.slice(k * linesPerItem, (k + cap) * linesPerItem),
          linesPerItem,
        );
        if (!part.done) return part;
        for (const a of part.value) answers.push(a);
      }
      return { done: true, value: answers };
    }
    const { signal } = context;
    const res = await attemptRequest(
      context,
      () =>
        this.client.bulk(
          // A string goes out as it is: see bulkBody.
          { operations: bulkBody(operations) as never, refresh: false, filter_path: this.answerFields },
          signal ? { signal } : {},
        ),
      (answer) => bulkOutcome(answer.items as unknown as BulkAnswer[]),
    );
    if (!res.done) {
      const status = statusOf(res);
      if (status !== 429 && status !== 413) return res;
      // One document larger than the node takes in a request: it will never go through.
      if (status === 413 && items === 1) return { done: true, value: [tooLargeAlone(operations[0])] };
      this.shrink(items);
      return { done: true, value: refusedAll(operations, linesPerItem, status, res.why) };
    }
    const answers = res.value.items as unknown as BulkAnswer[];
    if (items > 1) await this.isolateOversized(context, operations, linesPerItem, answers);
    let rejected = 0;
    for (const a of answers) if (firstResult(a)?.status === 429) rejected++;
    if (rejected === items && refusedForSize(firstResult(answers[0]!))) this.shrink(items);
    else if (rejected === 0 && items >= this.cap && ++this.successes >= GROWTH_AFTER) {
      this.cap = this.cap * 2 >= UNBOUNDED ? Infinity : this.cap * 2;
      this.successes = 0;
    }
    return { done: true, value: answers };
  }

  /**
   * Items refused because some operation of their shard's share of the request is larger
   * than the node takes (isOversizedOperation): every item of that share gets the refusal and
   * the answer does not say which one is large. Sends them again in halves, each half handled
   * the same way, until a refused item is the only one of its share: then the refusal is its
   * own (a dead letter), and the others went through — a few requests per large document,
   * instead of the whole share refused again on every retry, for ever.
   */
  private async isolateOversized(
    context: RequestContext,
    operations: unknown[],
    linesPerItem: number,
    answers: BulkAnswer[],
  ): Promise<void> {
    const refused: number[] = [];
    answers.forEach((a, k) => {
      const r = firstResult(a);
      if (r !== undefined && isOversizedOperation(r.status, r.error)) refused.push(k);
    });
    if (refused.length < 2) return;
    const half = Math.ceil(refused.length / 2);
    for (const part of [refused.slice(0, half), refused.slice(half)]) {
      const ops = part.flatMap((k) => operations.slice(k * linesPerItem, (k + 1) * linesPerItem));
      const res = await this.send(context, ops, linesPerItem);
      // Not answered (the node away meanwhile): refused for now, retried by the store.
      const again = res.done ? res.value : refusedAll(ops, linesPerItem, statusOf(res), res.why);
      part.forEach((k, n) => {
        answers[k] = again[n]!;
      });
    }
  }

  private shrink(items: number): void {
    this.successes = 0;
    if (items <= 1) return;
    const cap = Math.ceil(Math.min(items, this.cap) / 2);
    if (cap < this.cap) {
      this.cap = cap;
      this.log.debug({ itemsPerRequest: cap }, 'Elasticsearch refused a bulk for its size; smaller requests');
    }
  }
}

/**
 * Whether an item's 429 is about bytes (the indexing-pressure limit: its reason lists
 * `coordinating_and_primary_bytes=…` or `replica_bytes=…`), not a full thread-pool queue
 * (`… on EsThreadPoolExecutor[name = …/write, queue capacity = …]`).
 */
export function refusedForSize(item: BulkItem | undefined): boolean {
  const reason = item?.error?.reason ?? '';
  return !/queue capacity/i.test(reason) && /_bytes=|indexing.pressure/i.test(reason);
}

/**
 * A `create` action line, written as a string rather than serialised as an object per
 * request (and per retry): `indexJson` is the index name as JSON, shared by the batch.
 */
export function createActionLine(indexJson: string, id: string): string {
  return `{"create":{"_index":${indexJson},"_id":${JSON.stringify(id)}}}`;
}

/**
 * An event's `create` action, kept as its index (as JSON) and id until a body is written: its
 * line is made by bulkBody (createActionLine) and dropped at once, not held as a string for
 * as long as the request and its retries last.
 */
export class CreateAction {
  constructor(
    readonly indexJson: string,
    readonly id: string,
  ) {}
}

/** An operation's line: a string as it is, a CreateAction as its create line, anything else serialised. */
const lineOf = (op: unknown): string =>
  typeof op === 'string'
    ? op
    : op instanceof CreateAction
      ? createActionLine(op.indexJson, op.id)
      : JSON.stringify(op);

/** The first guess of a body's bytes per operation: an action line and an event's source, on average. */
const FIRST_GUESS_BYTES = 192;

/**
 * A `_bulk` body, every line newline-terminated, as the bytes that go out; a line given as a
 * string (a serialised action) goes in as it is.
 *
 * Why bytes: the client's own serializer appends line by line, and a string body is then
 * flattened, measured and copied again into a `Buffer` by the HTTP client: two more copies
 * of every body, on the V8 heap and off it. Here each line is encoded as soon as it is made,
 * straight into one buffer (its exact UTF-8 length when the line is ASCII, as JSON of ASCII
 * ids and fields is), which doubles when a line does not fit: no line outlives its encoding,
 * so a garbage collection in the middle of a large body has none of them to copy. What it
 * saves is in docs/decisions.md (21, 23).
 */
export function bulkBody(operations: readonly unknown[]): Buffer {
  let body = Buffer.allocUnsafe(Math.max(1024, operations.length * FIRST_GUESS_BYTES));
  let at = 0;
  for (let i = 0; i < operations.length; i++) {
    const line = lineOf(operations[i]);
    // Room for three bytes a UTF-16 unit (the most one takes) is room enough; with less, measure.
    if (body.length - at < 3 * line.length + 1) {
      const needed = Buffer.byteLength(line) + 1;
      if (body.length - at < needed) {
        const bigger = Buffer.allocUnsafe(Math.max(2 * body.length, at + needed));
        body.copy(bigger, 0, 0, at);
        body = bigger;
      }
    }
    at += body.write(line, at);
    body[at++] = 0x0a;
  }
  // Only what was written goes out: the rest of an unsafe allocation is whatever memory held.
  return at === body.length ? body : body.subarray(0, at);
}

const statusOf = (res: { cause?: unknown }): number | undefined =>
  (res.cause as { meta?: { statusCode?: number } } | undefined)?.meta?.statusCode;

/** The action of an action line (`create`, `index`, `delete`), as the answer names it. */
const actionOf = (action: unknown): string =>
  (action instanceof CreateAction
    ? 'create'
    : typeof action === 'string'
      ? /^\{"(\w+)"/.exec(action)?.[1]
      : Object.keys(action as object)[0]) ?? 'index';

/** The answers of items whose request was refused whole: retriable item-level refusals. */
function refusedAll(
  operations: readonly unknown[],
  linesPerItem: number,
  status: number | undefined,
  why: string,
): BulkAnswer[] {
  const out: BulkAnswer[] = [];
  for (let k = 0; k < operations.length / linesPerItem; k++)
    out.push({
      [actionOf(operations[k * linesPerItem])]: {
        status: 429,
        error: {
          type: 'es_rejected_execution_exception',
          reason: `refused whole (${status ?? 'no answer'}): ${why}`,
        },
      },
    });
  return out;
}

/**
 * The answer of a document sent alone and refused whole with 413: larger than the node's
 * `http.max_content_length` by itself, so it is refused every time (a dead letter).
 */
function tooLargeAlone(action: unknown): BulkAnswer {
  return {
    [actionOf(action)]: {
      status: 413,
      error: {
        type: 'request_entity_too_large',
        reason:
          "a _bulk request of this document alone was refused whole (413): it is larger than the node's http.max_content_length",
      },
    },
  };
}

/** An item's refusal in a few words: its status and error type. */
export function itemReason(r: BulkItem): string {
  return `${r.status} ${r.error?.type ?? 'error'}`;
}

/** An item's refusal as a dead letter's reason: status, type, reason and its cause. */
export function describeItemError(status: number, error: ElasticsearchItemError | undefined): string {
  const cause = error?.caused_by?.reason ? ` (${error.caused_by.reason})` : '';
  return `Elasticsearch ${status} ${error?.type ?? 'error'}: ${error?.reason ?? 'no reason given'}${cause}`;
}

/** An event's source line, read from the event when the body is written (JSON.stringify calls toJSON). */
export class SourceOf {
  constructor(private readonly event: EventDocument) {}
  toJSON(): EventDocument['source'] {
    return this.event.source;
  }
}

/** Each event's `create` action, the index names serialised once per index (a batch has one or two). */
export function createActions(events: readonly EventDocument[], indexOf: readonly string[]): CreateAction[] {
  const indexJson = new Map<string, string>();
  return events.map((e, i) => {
    const index = indexOf[i]!;
    let json = indexJson.get(index);
    if (json === undefined) {
      json = JSON.stringify(index);
      indexJson.set(index, json);
    }
    return new CreateAction(json, e.id);
  });
}
