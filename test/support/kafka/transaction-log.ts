import type { FetchedMessage } from '../../../src/kafkajs-patch/read-committed.js';

/**
 * A partition log written by several transactional producers (and one plain producer) that
 * interleave, commit and abort, as kafkajs decodes it: records with their batch context and
 * control records (abort key 0,0,0,0; commit key 0,0,0,1). It also answers what the broker
 * answers for a read_committed fetch from an offset: the records from there and the aborted
 * transactions that overlap them, in the order they ended (the broker's transaction index).
 */
export interface LoggedRecord {
  readonly message: FetchedMessage;
  /** Ground truth: should a read_committed reader see it? */
  readonly committed: boolean;
}

export interface TransactionLog {
  readonly records: readonly LoggedRecord[];
  readonly aborted: readonly { producerId: string; firstOffset: number; lastOffset: number }[];
  /** What a fetch from `from` brings: messages at or after it and the overlapping aborted transactions. */
  fetch(from: number): {
    messages: FetchedMessage[];
    abortedTransactions: { producerId: string; firstOffset: string }[];
  };
}

const CONTROL_ABORT = Buffer.from([0, 0, 0, 0]);
const CONTROL_COMMIT = Buffer.from([0, 0, 0, 1]);

export function transactionLog(
  random: () => number,
  { producers = 4, steps = 200, abortShare = 0.4 } = {},
): TransactionLog {
  const records: LoggedRecord[] = [];
  const aborted: { producerId: string; firstOffset: number; lastOffset: number }[] = [];
  /** Open transaction per producer: its first offset and the indexes of its records. */
  const open = new Map<string, { first: number; members: number[] }>();
  let seq = 0;

  const append = (producerId: string, inTransaction: boolean, key: Buffer | null) => {
    const offset = records.length;
    records.push({
      message: {
        offset: String(offset),
        key,
        value: Buffer.from(`${producerId}#${seq++}`),
        isControlRecord: false,
        batchContext: { producerId, inTransaction },
      },
      committed: !inTransaction,
    });
    return offset;
  };
  const end = (producerId: string, commit: boolean) => {
    const txn = open.get(producerId)!;
    open.delete(producerId);
    const offset = records.length;
    records.push({
      message: {
        offset: String(offset),
        key: commit ? CONTROL_COMMIT : CONTROL_ABORT,
        value: Buffer.from([0, 0, 0, 0, 0, 0]),
        isControlRecord: true,
        batchContext: { producerId, inTransaction: true },
      },
      committed: false,
    });
    for (const i of txn.members) {
      const r = records[i]!;
      records[i] = { ...r, committed: commit };
    }
    if (!commit) aborted.push({ producerId, firstOffset: txn.first, lastOffset: offset });
  };

  for (let step = 0; step < steps || open.size > 0; step++) {
    const closing = step >= steps;
    const pick = Math.floor(random() * (producers + 1));
    if (pick === producers) {
      if (!closing) append('plain', false, null);
      continue;
    }
    const producerId = String(1000 + pick);
    const txn = open.get(producerId);
    if (txn === undefined) {
      if (closing) continue;
      const key = random() < 0.1 ? Buffer.from(CONTROL_ABORT) : null; // a user key that looks like a marker
      const offset = append(producerId, true, key);
      open.set(producerId, { first: offset, members: [offset] });
    } else if (!closing && random() < 0.7) {
      const key = random() < 0.1 ? Buffer.from(CONTROL_ABORT) : null;
      txn.members.push(append(producerId, true, key));
    } else {
      end(producerId, random() >= abortShare);
    }
  }

  return {
    records,
    aborted,
    fetch(from) {
      return {
        messages: records.slice(from).map((r) => r.message),
        abortedTransactions: aborted
          .filter((t) => t.lastOffset >= from)
          .map((t) => ({ producerId: t.producerId, firstOffset: String(t.firstOffset) })),
      };
    },
  };
}
