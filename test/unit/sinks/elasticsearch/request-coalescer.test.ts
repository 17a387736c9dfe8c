import { describe, expect, it } from 'vitest';
import type { BulkAnswer } from '../../../../src/sinks/elasticsearch/bulk.js';
import { silentObserver } from '../../../../src/sinks/elasticsearch/observer.js';
import { type Attempt, type RequestContext, ungated } from '../../../../src/sinks/elasticsearch/request.js';
import { RequestCoalescer } from '../../../../src/sinks/elasticsearch/request-coalescer.js';

/** A bulk endpoint answered by hand: each request waits until the test answers it. */
function endpoint() {
  const requests: {
    operations: unknown[];
    linesPerItem: number;
    signal: AbortSignal | undefined;
    answer: (a: Attempt<BulkAnswer[]>) => void;
    fail: (e: unknown) => void;
  }[] = [];
  const send = (context: RequestContext, operations: unknown[], linesPerItem: number) =>
    new Promise<Attempt<BulkAnswer[]>>((answer, fail) => {
      requests.push({ operations, linesPerItem, signal: context.signal, answer, fail });
    });
  /** Answers every item of a request as created, tagged with its id so that the split shows. */
  const created = (i: number) => {
    const r = requests[i]!;
    const items: BulkAnswer[] = [];
    for (let k = 0; k < r.operations.length; k += r.linesPerItem) {
      const action = r.operations[k] as { create: { _id: string } };
      items.push({ create: { status: 201, error: { type: action.create._id, reason: '' } } });
    }
    r.answer({ done: true, value: items });
  };
  return { requests, send, created };
}

const ctx = (signal?: AbortSignal): RequestContext => ({
  op: 'bulk',
  gate: ungated,
  observer: silentObserver,
  signal,
});
const events = (...ids: string[]) => ids.flatMap((id) => [{ create: { _index: 'e', _id: id } }, { id }]);
const idsOf = (a: Attempt<BulkAnswer[]>) => (a.done ? a.value.map((x) => x.create!.error!.type) : a.why);
const flush = () => new Promise((r) => setImmediate(r));

describe('RequestCoalescer: the requests of every partition, merged while one is in flight', () => {
  it('sends a batch at once when nothing is in flight', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 1);
    const a = c.send(ctx(), events('a1', 'a2'), 2);
    expect(e.requests).toHaveLength(1);
    e.created(0);
    expect(idsOf(await a)).toEqual(['a1', 'a2']);
  });

  it('merges the batches that arrive while a request is out into one request after it, and splits the answer back', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 1);
    const a = c.send(ctx(), events('a1'), 2);
    const b = c.send(ctx(), events('b1', 'b2'), 2);
    const d = c.send(ctx(), events('d1'), 2);
    expect(e.requests, 'b and d wait for a').toHaveLength(1);
    e.created(0);
    await flush();
    expect(e.requests).toHaveLength(2);
    expect(e.requests[1]!.operations).toEqual([...events('b1', 'b2'), ...events('d1')]);
    e.created(1);
    expect(idsOf(await a)).toEqual(['a1']);
    expect(idsOf(await b)).toEqual(['b1', 'b2']);
    expect(idsOf(await d)).toEqual(['d1']);
  });

  it('with two lanes, a second batch goes out at once and a third waits to be merged', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 2);
    void c.send(ctx(), events('a1'), 2);
    void c.send(ctx(), events('b1'), 2);
    void c.send(ctx(), events('c1'), 2);
    void c.send(ctx(), events('d1'), 2);
    expect(e.requests).toHaveLength(2);
    e.created(1);
    await flush();
    expect(e.requests).toHaveLength(3);
    expect(e.requests[2]!.operations).toEqual([...events('c1'), ...events('d1')]);
  });

  it('sends a full load without waiting, and never more than maxItems in one request', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 3, 1);
    void c.send(ctx(), events('a1'), 2);
    void c.send(ctx(), events('b1', 'b2'), 2);
    expect(e.requests, '2 items queued: below maxItems, they wait').toHaveLength(1);
    void c.send(ctx(), events('c1', 'c2'), 2);
    // 4 items queued ≥ 3: one request goes at once, with what fits (b's 2; c's would make 4).
    expect(e.requests).toHaveLength(2);
    expect(e.requests[1]!.operations).toEqual(events('b1', 'b2'));
  });

  it('a request that fails whole fails for each of its callers alike', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 1);
    const a = c.send(ctx(), events('a1'), 2);
    const b = c.send(ctx(), events('b1'), 2);
    const d = c.send(ctx(), events('d1'), 2);
    e.requests[0]!.answer({ done: false, why: 'bulk: 503', reason: '503' });
    expect(await a).toEqual({ done: false, why: 'bulk: 503', reason: '503' });
    await flush();
    const boom = new Error('mapping exploded');
    e.requests[1]!.fail(boom);
    await expect(b).rejects.toBe(boom);
    await expect(d).rejects.toBe(boom);
  });

  it('merges only batches of the same shape (deletes are one line an item)', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 1);
    void c.send(ctx(), events('a1'), 2);
    void c.send(ctx(), [{ delete: { _index: 'p', _id: 'c-1' } }], 1);
    void c.send(ctx(), events('b1'), 2);
    e.created(0);
    await flush();
    expect(e.requests[1]!.linesPerItem).toBe(1);
    expect(e.requests[1]!.operations).toHaveLength(1);
    e.requests[1]!.answer({ done: true, value: [{ delete: { status: 200 } }] });
    await flush();
    expect(e.requests[2]!.operations).toEqual(events('b1'));
  });

  it('an aborted caller is rejected at once, queued or in flight; the request out is not cancelled', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 1);
    const outCaller = new AbortController();
    const queuedCaller = new AbortController();
    const a = c.send(ctx(outCaller.signal), events('a1'), 2);
    const b = c.send(ctx(queuedCaller.signal), events('b1'), 2);
    const d = c.send(ctx(), events('d1'), 2);
    expect(e.requests[0]!.signal?.aborted).toBe(false);
    outCaller.abort(new Error('partition revoked'));
    queuedCaller.abort(new Error('shutting down'));
    await expect(a).rejects.toThrow('partition revoked');
    await expect(b).rejects.toThrow('shutting down');
    expect(e.requests[0]!.signal?.aborted, 'its only caller gave up: the request is cancelled').toBe(true);
    e.created(0);
    await flush();
    expect(e.requests[1]!.operations, 'b left the queue').toEqual(events('d1'));
    e.created(1);
    expect(idsOf(await d)).toEqual(['d1']);
  });

  it('a shared request is cancelled only when every caller in it gave up', async () => {
    const e = endpoint();
    const c = new RequestCoalescer<BulkAnswer>(e.send, 4_000, 1);
    void c.send(ctx(), events('a1'), 2);
    const one = new AbortController();
    const two = new AbortController();
    const b = c.send(ctx(one.signal), events('b1'), 2);
    const d = c.send(ctx(two.signal), events('d1'), 2);
    e.created(0);
    await flush();
    const shared = e.requests[1]!;
    one.abort(new Error('revoked'));
    await expect(b).rejects.toThrow('revoked');
    expect(shared.signal?.aborted, 'd still waits for it').toBe(false);
    two.abort(new Error('revoked too'));
    await expect(d).rejects.toThrow('revoked too');
    expect(shared.signal?.aborted).toBe(true);
  });
});
