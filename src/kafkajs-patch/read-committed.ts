import { createRequire } from 'node:module';

/**
 * kafkajs 2.2.4's read_committed filter lets records of aborted transactions through; the
 * project patches it at install (patches/kafkajs+2.2.4.patch, applied by patch-package in
 * `postinstall`). An install that skipped scripts (`--ignore-scripts`, a copied node_modules)
 * would silently bring the leak back, so every process that reads topics read_committed
 * checks the installed filter by behaviour first and refuses to run without the fix.
 */

/** The shape of kafkajs's filterAbortedMessages (src/consumer/filterAbortedMessages.js). */
export type AbortedMessagesFilter = (fetch: {
  messages: FetchedMessage[];
  abortedTransactions: { producerId: string; firstOffset: string }[];
}) => FetchedMessage[];

/** A record as kafkajs decodes it from a fetch, the fields the filter reads. */
export interface FetchedMessage {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly isControlRecord: boolean;
  readonly batchContext: { readonly producerId: string; readonly inTransaction: boolean };
}

const require = createRequire(import.meta.url);

/** The filter kafkajs actually uses (the installed file, patched or not). */
export function installedAbortedMessagesFilter(): AbortedMessagesFilter {
  return require('kafkajs/src/consumer/filterAbortedMessages.js') as AbortedMessagesFilter;
}

const record = (offset: number, producerId: string, value: string): FetchedMessage => ({
  offset: String(offset),
  key: null,
  value: Buffer.from(value),
  isControlRecord: false,
  batchContext: { producerId, inTransaction: true },
});
const abortMarker = (offset: number, producerId: string): FetchedMessage => ({
  offset: String(offset),
  key: Buffer.from([0, 0, 0, 0]),
  value: Buffer.from([0, 0, 0, 0, 0, 0]),
  isControlRecord: true,
  batchContext: { producerId, inTransaction: true },
});

/**
 * A fetch that starts at offset 2, inside two aborted transactions (producer 1 from offset 0,
 * producer 2 from offset 1), listed as the broker lists them: in the order they ended. Only
 * "kept" may come through.
 */
const probe = () => ({
  messages: [
    record(2, '1', 'aborted'),
    record(3, '2', 'aborted'),
    abortMarker(4, '2'),
    record(5, '1', 'aborted'),
    abortMarker(6, '1'),
    record(7, '3', 'kept'),
  ],
  abortedTransactions: [
    { producerId: '2', firstOffset: '1' },
    { producerId: '1', firstOffset: '0' },
  ],
});

/** True when the filter drops every record of the probe's aborted transactions. */
export function filtersAbortedTransactions(filter: AbortedMessagesFilter): boolean {
  const kept = filter(probe()).filter((m) => !m.isControlRecord);
  return kept.length === 1 && kept[0]!.value?.toString() === 'kept';
}

/** Throws one clear line when the installed kafkajs would let aborted records through. */
export function assertKafkajsReadCommitted(): void {
  let filter: AbortedMessagesFilter;
  try {
    filter = installedAbortedMessagesFilter();
  } catch (err) {
    throw new Error(
      `kafkajs's read_committed filter cannot be checked (${(err as Error).message}); ` +
        'patches/kafkajs+2.2.4.patch fits kafkajs 2.2.4 only',
    );
  }
  if (!filtersAbortedTransactions(filter)) {
    throw new Error(
      'kafkajs is installed without patches/kafkajs+2.2.4.patch, so read_committed would let records of ' +
        'aborted transactions through: run `npm install` (or `npx patch-package`) without --ignore-scripts',
    );
  }
}
