import type { EventDocument } from '../../../src/sinks/ports.js';

/**
 * Event documents as the worker writes them, each created by the next record of `in/0`
 * (`in/0/0`, `in/0/1`, …): a factory per test file, so offsets never repeat within it.
 */
export function eventDocuments() {
  let nextOffset = 0;
  return (id: string, over: Partial<EventDocument['source']> = {}): EventDocument => ({
    id,
    source: {
      clientId: 'c-1',
      name: 'purchase',
      ts: '2026-11-30T12:00:00.000Z',
      data: { n: id },
      origin: { topic: 'in', partition: 0, offset: nextOffset++ },
      ...over,
    },
  });
}
