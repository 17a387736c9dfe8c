import type { Attempt, RequestContext } from './request.js';

/**
 * Sends one request of items and answers item by item, in order: BulkRequests.send (`_bulk`,
 * `linesPerItem` lines an item, an answer an item) or an `mget` (an id an item, a document an item).
 */
export type SendItems<A> = (
  context: RequestContext,
  operations: unknown[],
  linesPerItem: number,
) => Promise<Attempt<A[]>>;

interface Job<A> {
  readonly context: RequestContext;
  readonly operations: unknown[];
  readonly linesPerItem: number;
  readonly items: number;
  /** The request it went out in: cancelled once every caller in it has given up. */
  round?: { readonly controller: AbortController; remaining: number };
  settle?: (r: { ok: true; value: Attempt<A[]> } | { ok: false; error: unknown }) => void;
}

/**
 * The requests of every partition of one kind (the `_bulk` writes; the profiles' `mget`
 * reads), merged while some are in flight. Each partition has one batch in flight, so
 * without this Elasticsearch gets as many small requests at once as there are partitions —
 * and a node spends per request (routing, the translog sync, queueing on its write threads)
 * what it would rather spend per document, so eight small requests at once take far longer
 * each than two; and the worker spends per request (the client, HTTP, a socket
 * write that wakes the node) what it would rather spend per document. Here a batch goes out
 * at once while fewer than `lanes` requests are out; one that arrives when they are all out
 * waits for one of them and goes out with every other batch that arrived meanwhile, as one
 * request (up to `maxItems` items: a full load goes out without waiting). The answer is
 * split back by item, so each caller's per-item retry and classification are untouched; a
 * request that fails whole fails for each caller alike.
 *
 * Only batches of the same shape (`linesPerItem`) are merged. A caller whose signal aborts
 * gets its rejection at once, queued or in flight; a request already out is cancelled only
 * when every caller in it has aborted (it carries the others' items), else its answer for
 * that caller is dropped.
 */
export class RequestCoalescer<A> {
  private readonly queue: Job<A>[] = [];
  private inFlight = 0;
  private queuedItems = 0;

  constructor(
    private readonly sendItems: SendItems<A>,
    private readonly maxItems: number,
    /** Requests out at once before a batch waits to be merged. */
    private readonly lanes: number,
  ) {}

  send(context: RequestContext, operations: unknown[], linesPerItem: number): Promise<Attempt<A[]>> {
    const { signal } = context;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const job: Job<A> = { context, operations, linesPerItem, items: operations.length / linesPerItem };
      const onAbort = () => {
        const i = this.queue.indexOf(job);
        if (i >= 0) {
          this.queue.splice(i, 1);
          this.queuedItems -= job.items;
        }
        job.settle = undefined;
        if (job.round && --job.round.remaining === 0) job.round.controller.abort(signal?.reason);
        reject(signal?.reason);
      };
      job.settle = (r) => {
        signal?.removeEventListener('abort', onAbort);
        if (r.ok) resolve(r.value);
        else reject(r.error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(job);
      this.queuedItems += job.items;
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0 && (this.inFlight < this.lanes || this.queuedItems >= this.maxItems)) {
      this.dispatch(this.takeRound());
    }
  }

  /** The oldest batch and those queued after it of its shape, up to maxItems (at least one). */
  private takeRound(): Job<A>[] {
    const shape = this.queue[0]!.linesPerItem;
    const round: Job<A>[] = [];
    let items = 0;
    for (let i = 0; i < this.queue.length; ) {
      const job = this.queue[i]!;
      if (job.linesPerItem !== shape || (round.length > 0 && items + job.items > this.maxItems)) {
        i++;
        continue;
      }
      round.push(job);
      items += job.items;
      this.queue.splice(i, 1);
      this.queuedItems -= job.items;
    }
    return round;
  }

  private dispatch(round: Job<A>[]): void {
    this.inFlight++;
    const first = round[0]!;
    const operations = round.length === 1 ? first.operations : round.flatMap((j) => j.operations);
    // The request carries several callers' items: no single caller's signal may cancel it,
    // only all of them (then it need not wait for a pass, nor be answered).
    const controller = new AbortController();
    const shared = { controller, remaining: round.length };
    for (const job of round) job.round = shared;
    const context: RequestContext = { ...first.context, signal: controller.signal };
    this.sendItems(context, operations, first.linesPerItem)
      .then(
        (attempt) => {
          let at = 0;
          for (const job of round) {
            const value: Attempt<A[]> = attempt.done
              ? { done: true, value: attempt.value.slice(at, at + job.items) }
              : attempt;
            at += job.items;
            job.settle?.({ ok: true, value });
          }
        },
        (error: unknown) => {
          for (const job of round) job.settle?.({ ok: false, error });
        },
      )
      .finally(() => {
        this.inFlight--;
        this.pump();
      });
  }
}
