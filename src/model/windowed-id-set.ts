import { assertWindow, type WindowedSeenSet } from './seen-window.js';

/**
 * The message ids admitted during the last `windowMs` milliseconds, kept off the V8 heap.
 *
 * The contract of `WindowedSeenSet` (seen-window.ts), as `createWindowedSeenSet<string>`
 * keeps it in a `Set` (operators/swept-seen-set.ts). Why a second
 * implementation: at full speed the window holds the ids of 10 s of traffic, 250,000 and
 * more. As a `Set` of strings that is some 110 bytes per id on the V8 heap, where every major
 * GC marks it and the heap's growth factor doubles it in RSS (a quarter of the worker's live
 * heap in a drain). Here an id is its encoded characters in a byte ring plus 32 bytes of typed
 * arrays: no object per id, nothing for the GC to mark, memory that is not doubled.
 *
 * It never answers "seen" for a key it did not admit: a hash hit is confirmed by comparing the
 * stored characters, so a collision costs a comparison, never a dropped message.
 *
 * Layout: entries live in a ring indexed by sequence number (admission order, so expiry walks
 * from the head); an open-addressing table (linear probing) points at ring slots. Expired
 * entries are not removed from the table: a slot whose entry has left the ring counts as free
 * for an insert and as occupied for a probe, and the table is rebuilt from the live entries
 * once half of it has been filled.
 */
export interface WindowedIdSet extends WindowedSeenSet<string> {
  /** Bytes of memory it holds (all of it off the V8 heap). */
  readonly footprint: number;
}

const MIN_ENTRIES = 1024;
/** Bytes a UTF-16 code unit takes at most in the encoding below. */
const MAX_BYTES_PER_UNIT = 3;
const ESCAPE = 0xff;
/** The byte ring's first size per entry: a UUID takes 36. */
const BYTES_PER_ENTRY = 64;

export function createWindowedIdSet(
  windowMs: number,
  now: () => number,
  initialEntries = MIN_ENTRIES,
): WindowedIdSet {
  assertWindow(windowMs);
  let capacity = nextPowerOfTwo(Math.max(MIN_ENTRIES, initialEntries));
  let mask = capacity - 1;
  // Per entry, by ring slot (sequence & mask).
  let times = new Float64Array(capacity);
  let starts = new Float64Array(capacity); // absolute byte position (see `written`)
  let lengths = new Uint32Array(capacity);
  let hashes = new Int32Array(capacity);
  // The table: ring slot + 1, 0 = never used.
  let table = new Int32Array(capacity * 2);
  let tableMask = table.length - 1;
  let filled = 0;
  // The byte ring. Positions are absolute counts of bytes written, taken modulo its length;
  // an encoding never wraps: one that would is written at the start and the gap counts as used.
  let bytes = new Uint8Array(capacity * BYTES_PER_ENTRY);
  let written = 0;
  // Sequences are doubles, exact to 2^53: at a million ids a second, for 285 years.
  let head = 0; // sequence of the oldest entry held
  let tail = 0; // sequence the next entry gets

  const isLive = (slot: number) => ((slot - head) & mask) < tail - head;
  const bytesInUse = () => (head === tail ? 0 : written - (starts[head & mask] as number));

  /** Encodes `key` at the free end of the ring; returns its hash, its length in `encodedLength`. */
  let encodedLength = 0;
  let encodedAt = 0;
  const encode = (key: string): number => {
    const most = key.length * MAX_BYTES_PER_UNIT;
    reserve(most);
    let at = written % bytes.length;
    if (at + most > bytes.length) {
      written += bytes.length - at;
      reserve(most);
      at = written % bytes.length;
    }
    // FNV-1a over an injective encoding: units below 0xff as one byte, others as three.
    const out = bytes;
    let h = 0x811c9dc5 | 0;
    let p = at;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c < ESCAPE) {
        out[p++] = c;
        h = Math.imul(h ^ c, 0x01000193);
      } else {
        out[p++] = ESCAPE;
        out[p++] = c >>> 8;
        out[p++] = c & 0xff;
        h = Math.imul(h ^ ESCAPE, 0x01000193);
        h = Math.imul(h ^ (c >>> 8), 0x01000193);
        h = Math.imul(h ^ (c & 0xff), 0x01000193);
      }
    }
    encodedAt = at;
    encodedLength = p - at;
    return h;
  };

  const sameBytes = (slot: number): boolean => {
    if (lengths[slot] !== encodedLength) return false;
    const b = bytes;
    const from = (starts[slot] as number) % b.length;
    for (let i = 0; i < encodedLength; i++) {
      if (b[from + i] !== b[encodedAt + i]) return false;
    }
    return true;
  };

  /** Makes room for `n` more bytes at the free end, growing the ring if the live ones leave too little. */
  const reserve = (n: number): void => {
    const at = written % bytes.length;
    const gap = at + n > bytes.length ? bytes.length - at : 0;
    if (bytesInUse() + gap + n <= bytes.length) return;
    // Half as much again as is needed: room to wrap without copying often, not a doubling.
    relayout(roundUp((bytesInUse() + n) * 1.5));
  };

  /** Moves the live bytes, gaps included, to the start of a new ring of `size` bytes. */
  const relayout = (size: number): void => {
    const live = bytesInUse();
    const next = new Uint8Array(size);
    const base = written - live;
    const from = base % bytes.length;
    // In order from the head's: at most two runs of the old ring.
    const firstRun = Math.min(live, bytes.length - from);
    next.set(bytes.subarray(from, from + firstRun), 0);
    if (live > firstRun) next.set(bytes.subarray(0, live - firstRun), firstRun);
    for (let s = head; s < tail; s++) starts[s & mask] = (starts[s & mask] as number) - base;
    bytes = next;
    written = live;
  };

  const place = (slot: number, h: number): void => {
    let i = h & tableMask;
    for (;;) {
      const v = table[i] as number;
      if (v === 0) {
        filled++;
        break;
      }
      if (!isLive(v - 1)) break;
      i = (i + 1) & tableMask;
    }
    table[i] = slot + 1;
  };

  const rebuildTable = (size: number): void => {
    table = new Int32Array(size);
    tableMask = size - 1;
    filled = 0;
    for (let s = head; s < tail; s++) place(s & mask, hashes[s & mask] as number);
  };

  /** Moves the entries to a ring of `size` slots (a power of two that holds them) and rebuilds the table. */
  const resizeRing = (size: number): void => {
    const m = size - 1;
    const t = new Float64Array(size);
    const st = new Float64Array(size);
    const l = new Uint32Array(size);
    const hs = new Int32Array(size);
    for (let s = head; s < tail; s++) {
      const from = s & mask;
      const to = s & m;
      t[to] = times[from] as number;
      st[to] = starts[from] as number;
      l[to] = lengths[from] as number;
      hs[to] = hashes[from] as number;
    }
    capacity = size;
    mask = m;
    times = t;
    starts = st;
    lengths = l;
    hashes = hs;
    rebuildTable(size * 2);
  };

  /** After a burst, gives the memory back: a quiet partition should not hold a busy one's window. */
  const shrinkIfSparse = (): void => {
    const held = tail - head;
    if (capacity <= MIN_ENTRIES || held * 8 > capacity) return;
    resizeRing(Math.max(MIN_ENTRIES, nextPowerOfTwo(held * 2)));
    const live = bytesInUse();
    const least = MIN_ENTRIES * BYTES_PER_ENTRY;
    if (bytes.length > least && live * 4 <= bytes.length) relayout(Math.max(least, roundUp(live * 1.5)));
  };

  const evictUntil = (t: number): void => {
    const before = head;
    while (head < tail && t - (times[head & mask] as number) >= windowMs) head++;
    if (head === tail) written = 0;
    if (head !== before) shrinkIfSparse();
  };

  return {
    admit(key) {
      const t = now();
      evictUntil(t);
      // Grown before it is full, so that the table keeps free slots to stop probes on.
      if ((tail - head) * 8 >= capacity * 7) resizeRing(capacity * 2);
      const h = encode(key);
      let i = h & tableMask;
      let free = -1;
      for (;;) {
        const v = table[i] as number;
        if (v === 0) break;
        const slot = v - 1;
        if (isLive(slot)) {
          if (hashes[slot] === h && sameBytes(slot)) return false;
        } else if (free < 0) free = i;
        i = (i + 1) & tableMask;
      }
      const slot = tail & mask;
      times[slot] = t;
      starts[slot] = written;
      lengths[slot] = encodedLength;
      hashes[slot] = h;
      written += encodedLength;
      tail++;
      if (free >= 0) table[free] = slot + 1;
      else {
        table[i] = slot + 1;
        filled++;
        if (filled * 2 > table.length) rebuildTable(table.length);
      }
      return true;
    },
    evictExpired() {
      evictUntil(now());
    },
    get emptyAt() {
      return head < tail ? (times[(tail - 1) & mask] as number) + windowMs : undefined;
    },
    get size() {
      return tail - head;
    },
    get footprint() {
      return (
        times.byteLength +
        starts.byteLength +
        lengths.byteLength +
        hashes.byteLength +
        table.byteLength +
        bytes.byteLength
      );
    },
    clear() {
      head = 0;
      tail = 0;
      written = 0;
      table.fill(0);
      filled = 0;
    },
  };
}

/** Whole pages of 4 KiB: the byte ring's length need not be a power of two. */
function roundUp(n: number): number {
  return Math.ceil(n / 4096) * 4096;
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
